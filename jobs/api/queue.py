"""/api/v1/queue: the waiting jobs the caller may see, in queue order (SPEC Q2), and what a
job not yet made would do there (SPEC J24): the answer beside the form's Create button."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Q
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from ninja import Body, Router, Schema, Status

from jobs.admission.words import word_jobs
from jobs.api.forms import bound_form, project_of
from jobs.api.schemas import Errors, JobOut, errors_of, job_out, page_links
from jobs.forms.job import DraftForm
from jobs.models import Job
from jobs.views import predict, queue_pages
from jobs.views.lists import annotated_jobs

router = Router(tags=["queue"])


class QueueOut(Schema):
    jobs: list[JobOut]
    total: int
    hidden: int  # waiting jobs of others the caller may not see, counted in the places
    next: str | None
    previous: str | None


class Blocker(Schema):
    name: str
    url: str
    ends_at: datetime | None


class ForecastOut(Schema):
    refused: str | None  # it could never start, and why; nothing else is said then
    hint: str | None
    starts_now: bool | None
    spec: str | None
    position: int | None
    queue_length: int | None
    latest_start: datetime | None
    why: str | None
    blockers: list[Blocker]
    suggestions: list[str]
    borrowed: str | None
    resume_caveat: str | None
    as_of: datetime | None


@router.get(
    "",
    response=QueueOut,
    summary=gettext_noop("The queue in order"),
    description=gettext_noop(
        "The queued jobs you may see (all of them for an admin), first to start first; `project` "
        "(a slug) narrows it to one project, `mine` to your own jobs. Follow `next` for the rest."
    ),
)
def queue(request, project: str | None = None, mine: bool = False):
    user = request.user
    jobs = annotated_jobs(user).queued()
    waiting = Job.objects.queued()
    kept = {}
    if project:
        chosen = project_of(request, project)
        jobs, waiting = jobs.filter(project=chosen), waiting.filter(project=chosen)
        kept["project"] = project
    if mine:
        jobs = jobs.filter(owner=user)
        kept["mine"] = "true"
    visible = jobs.count()
    page = queue_pages.page_of(jobs, request.GET, total=visible)
    word_jobs(page.rows)
    hidden = 0 if user.is_staff or mine else waiting.exclude(Q(pk__in=jobs.values("pk"))).count()
    return {
        "jobs": [job_out(request, job, list(job.spec_names)) for job in page.rows],
        "total": visible,
        "hidden": hidden,
        **page_links(request, page.links(kept)),
    }


@router.post(
    "/predict",
    response={200: ForecastOut, 422: Errors},
    summary=gettext_noop("Where a job would start if made now"),
    description=gettext_noop(
        "The job's fields as for creating it; only those that place it count (specs, node count, "
        "priority, pool, nodes…). Nothing is made."
    ),
)
def predict_draft(request, payload: Body[dict[str, Any]]):
    project = project_of(request, payload.get("project"))
    form = bound_form(payload, user=request.user, project=project, kind=DraftForm)
    context = predict.context_for(form, request.user, project)
    if form.errors or not context.get("forecast"):
        return Status(422, {"detail": _incomplete(), "errors": errors_of(form)})
    refusal = context.get("refusal")
    if refusal:
        return Status(200, {**_empty(), "refused": refusal.text, "hint": refusal.hint or None})
    result = context["forecast"]
    guess = result.prediction
    return Status(
        200,
        {
            **_empty(),
            "starts_now": guess.starts_now,
            "spec": context.get("spec_name"),
            "position": guess.position,
            "queue_length": guess.queue_length,
            "latest_start": result.latest_start,
            "why": result.text or None,
            "blockers": [
                {"name": n, "url": request.build_absolute_uri(u) if u else "", "ends_at": at}
                for n, u, at in result.blockers
            ],
            "suggestions": [str(s) for s in result.suggestions],
            "borrowed": result.borrowed or None,
            "resume_caveat": str(context["resume_caveat"])
            if context.get("resume_caveat")
            else None,
            "as_of": result.as_of,
        },
    )


def _empty() -> dict:
    return dict.fromkeys(ForecastOut.model_fields) | {"blockers": [], "suggestions": []}


def _incomplete() -> str:
    return _("Not enough to place the job yet: see the fields named below.")
