"""/api/v1/jobs: list, read, create, stop and delete jobs, and read their events (SPEC I1).

Each operation is the page's own rule: the list is /jobs/'s (its search fields, order and
pages by key), a job is found as its page finds it, a job is made through the job form.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils.translation import gettext_noop
from ninja import Body, Query, Router, Schema
from ninja.errors import HttpError

from jobs import export, operations
from jobs.admission.words import word_jobs
from jobs.api.auth import writable
from jobs.api.changes import change, make
from jobs.api.forms import project_of
from jobs.api.schemas import Detail, Errors, JobOut, job_out, page_links
from jobs.permissions import get_job_for_user
from jobs.services import initial_from_job
from jobs.views.lists import listed, search

router = Router(tags=["jobs"])


class JobPage(Schema):
    jobs: list[JobOut]
    total: int | None  # None: more than 10,000
    next: str | None
    previous: str | None


class EventOut(Schema):
    at: datetime
    kind: str
    phase: str
    message: str
    actor: str | None


class ListParams(Schema):
    name: str | None = None
    status: str | None = None
    creator: str | None = None
    spec: str | None = None
    output_path: str | None = None
    job_type: str | None = None
    sort: str | None = None
    per_page: int | None = None
    after: str | None = None
    before: str | None = None


@router.get(
    "",
    response=JobPage,
    summary=gettext_noop("The jobs you may see, a page at a time"),
    description=gettext_noop(
        "/jobs/'s list: the same search fields, `sort` (a column, `-` first for descending), "
        "`per_page` (up to 100) and pages by key: follow `next`."
    ),
)
def list_jobs(request, params: Query[ListParams]):
    given = {k: str(v) for k, v in params.dict().items() if v not in (None, "")}
    filters = search(request.user, given)
    if not filters.is_valid():
        raise HttpError(422, "; ".join(f"{k}: {' '.join(v)}" for k, v in filters.errors.items()))
    _order, page = listed(request.user, filters, given)
    word_jobs(page.rows)
    kept = {k: v for k, v in given.items() if k not in ("after", "before")}
    return {
        "jobs": [job_out(request, job, list(job.spec_names)) for job in page.rows],
        "total": page.total,
        **page_links(request, page.links(kept)),
    }


@router.post(
    "",
    response={201: JobOut, 422: Errors, 429: Detail},
    summary=gettext_noop("Create a job"),
    description=gettext_noop(
        "A job from the job form's fields (`name`, `image`, `specs`, `node_count`, `command`, "
        "`duration_hours`…; choices by name or id) and `project` (a slug; your current project "
        "when left out). A refusal names the form's fields, in its words."
    ),
)
def create(request, payload: Body[dict[str, Any]]):
    writable(request)
    return make(request, payload, project_of(request, payload.get("project")))


@router.get(
    "/{int:job_id}",
    response=JobOut,
    summary=gettext_noop("One job"),
)
def detail(request, job_id: int):
    job, _may = get_job_for_user(request.user, job_id)
    return job_out(request, job)


@router.get("/{int:job_id}/events", response=list[EventOut], summary=gettext_noop("A job's events"))
def events(request, job_id: int):
    job, _may = get_job_for_user(request.user, job_id)
    return [
        {"at": e.at, "kind": e.kind, "phase": e.phase, "message": e.text,
         "actor": e.actor.get_username() if e.actor else None}
        for e in job.events.select_related("actor")
    ]  # fmt: skip


@router.post("/{int:job_id}/stop", response={200: JobOut, 409: Detail, 429: Detail},
             summary=gettext_noop("Stop a job"))  # fmt: skip
def stop(request, job_id: int):
    return change(request, job_id, lambda job: operations.stop(job, request.user))


@router.delete(
    "/{int:job_id}",
    response={204: None, 409: Detail, 429: Detail},
    summary=gettext_noop("Delete a job"),
)
def delete(request, job_id: int):
    return change(request, job_id, lambda job: operations.delete(job, request.user), gone=True)


@router.get(
    "/{int:job_id}/yaml",
    response={200: str},
    summary=gettext_noop("A job as job.yaml"),
    description=gettext_noop(
        "The job's fields as the job form's Export button writes them: submit the file to make the"
        " same job again."
    ),
)
def job_yaml(request, job_id: int):
    from django.http import HttpResponse

    job, _may = get_job_for_user(request.user, job_id)
    data = {**initial_from_job(job), "name": job.name}  # the job itself, not a copy of it
    text = export.as_yaml(data, user=request.user, project=job.project)
    return HttpResponse(text, content_type="application/yaml; charset=utf-8")
