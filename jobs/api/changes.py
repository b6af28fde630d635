"""/api/v1/jobs/{id}/priority, /duration and /clone: a job's changes, by the rules of its
page's buttons (SPEC O3, O7)."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_noop
from ninja import Body, Router, Schema, Status

from console import ratelimit
from jobs import operations
from jobs.api.auth import writable
from jobs.api.forms import bound_form
from jobs.api.schemas import Detail, Errors, JobOut, job_out, refused, too_many
from jobs.permissions import get_job_for_user
from jobs.services import initial_from_job
from jobs.submission import submit

router = Router(tags=["jobs"])


class PriorityIn(Schema):
    priority: int


class DurationIn(Schema):
    hours: int


def make(request, data: dict, project, cloned_from=None):
    """A job from ``data`` (the job form's fields) through the form's own path, within the
    pages' rate limit: 201 with the job, or 422 with the form's words on its fields."""
    form = bound_form(data, user=request.user, project=project)
    wait = ratelimit.hit("submit", request.user)
    if wait is not None:
        return too_many(wait)
    job = submit(form, user=request.user, project=project, cloned_from=cloned_from, via="api")
    if job is None:
        return refused(form)
    return Status(201, job_out(request, job))


def change(request, job_id: int, act, *, gone: bool = False):
    """``act(job)`` on a job the caller may change, by a read-and-write caller, within the
    pages' rate limit; a change that does not apply now (``operations.NotApplicable``) is
    409 with its words. Answers the job as it is then (``gone``: 204, it was deleted)."""
    writable(request)
    job, _may = get_job_for_user(request.user, job_id, change=True)
    wait = ratelimit.hit("job_change", request.user)
    if wait is not None:
        return too_many(wait)
    try:
        act(job)
    except operations.NotApplicable as exc:
        return Status(409, {"detail": str(exc)})
    if gone:
        return Status(204, None)
    job.refresh_from_db()
    return Status(200, job_out(request, job))


@router.post(
    "/{int:job_id}/priority",
    response={200: JobOut, 409: Detail, 429: Detail},
    summary=gettext_noop("Change a queued job's priority (0 normal, 1 urgent, 2 very urgent)"),
)
def priority(request, job_id: int, payload: PriorityIn):
    return change(
        request, job_id, lambda job: operations.adjust_priority(job, payload.priority, request.user)
    )


@router.post("/{int:job_id}/duration", response={200: JobOut, 409: Detail, 429: Detail},
             summary=gettext_noop("Change how long a job may run, in hours"))  # fmt: skip
def duration(request, job_id: int, payload: DurationIn):
    return change(
        request, job_id, lambda job: operations.adjust_duration(job, payload.hours, request.user)
    )


@router.post(
    "/{int:job_id}/clone",
    response={201: JobOut, 422: Errors, 429: Detail},
    summary=gettext_noop("A new job like this one"),
    description=gettext_noop(
        "The job's own fields (its name with -copy), with what the body changes ({} for none): "
        "as the page's Clone button fills the form, then Create."
    ),
)
def clone(request, job_id: int, payload: Body[dict[str, Any]]):
    writable(request)
    job, _may = get_job_for_user(request.user, job_id)
    return make(request, {**initial_from_job(job), **payload}, job.project, cloned_from=job)
