"""What the API's job operations answer: a job as JSON, and the answers for refusals."""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest
from django.utils.translation import gettext as _
from ninja import Schema
from ninja.responses import Response, Status

from jobs.admission.words import word_jobs
from jobs.faults.idle import found_idle_of
from jobs.models import Job
from jobs.models import Status as JobStatus


class JobOut(Schema):
    id: int
    name: str
    url: str
    owner: str
    project: str
    status: str
    status_label: str
    phase: str
    priority: int
    mode: str
    specs: list[str]
    nodes: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    queue_position: int | None
    latest_start: datetime | None
    why_it_waits: str
    reason: str
    borrowing: bool
    idle_since: datetime | None


class Errors(Schema):
    detail: str
    errors: dict[str, list[str]]


class Detail(Schema):
    detail: str


def job_out(request: HttpRequest, job: Job, specs: list[str] | None = None) -> dict:
    if specs is None:
        specs = [c.spec.name for c in job.spec_choices.select_related("spec").order_by("order")]
    if not hasattr(job, "reason_text"):
        word_jobs([job])
    return {
        "id": job.pk, "name": job.name, "url": request.build_absolute_uri(job.get_absolute_url()),
        "owner": job.owner.get_username(), "project": job.project.slug, "status": job.status,
        "status_label": job.get_status_display(), "phase": job.phase, "priority": job.priority,
        "mode": job.mode, "specs": specs, "nodes": job.nodes, "created_at": job.created_at,
        "started_at": job.started_at, "finished_at": job.finished_at,
        "queue_position": job.queue_position, "latest_start": job.latest_start,
        "why_it_waits": job.reason_text, "reason": job.reason_words, "borrowing": job.borrowing,
        "idle_since": found_idle_of(job) if job.status == JobStatus.RUNNING else None,
    }  # fmt: skip


def too_many(wait: int):
    body = {"detail": _("Too many requests: try again in %(n)s s.") % {"n": wait}}
    response = Response(body, status=429)
    response["Retry-After"] = str(wait)
    return response


def errors_of(form) -> dict[str, list[str]]:
    """A form's errors, under its field names, in its words."""
    return {field: list(messages) for field, messages in form.errors.items()}


def refused(form) -> Status:
    """A job the form refused: 422, its words under the form's field names."""
    detail = _("The job was not created: see the fields named below.")
    return Status(422, {"detail": detail, "errors": errors_of(form)})


def page_links(request: HttpRequest, links: dict[str, str]) -> dict[str, str | None]:
    """A page's next and previous pages as whole addresses (None where there is none)."""
    base = request.build_absolute_uri(request.path)
    return {way: base + links[way] if way in links else None for way in ("next", "previous")}
