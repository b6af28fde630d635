"""/api/v1/jobs/{id}/logs and /usage: a run's log from an offset, to follow as it grows, and
its resource use (SPEC O2), as the job's page reads them."""

from __future__ import annotations

from datetime import datetime

from django.utils.translation import gettext_noop
from ninja import Router, Schema

from jobs.permissions import get_job_for_user
from jobs.views.runs import attempt_of, log_of, offset_of, read_on

router = Router(tags=["jobs"])


class LogOut(Schema):
    attempt: int | None  # None: the job has not started yet
    replica: str | None
    replicas: list[str]
    text: str
    offset: int
    live: bool
    more: bool


class Sample(Schema):
    replica: str
    at: datetime
    cpu_percent: float | None
    memory_mib: float | None
    accelerator_util: float | None
    accelerator_memory_mib: float | None


class UsageOut(Schema):
    attempt: int | None
    samples: list[Sample]


@router.get(
    "/{int:job_id}/logs",
    response=LogOut,
    summary=gettext_noop("A run's log from an offset"),
    description=gettext_noop(
        "`attempt` (a number; the latest when left out), `replica` (a name; the entry node's when "
        "left out), `offset` (bytes; 0 when left out). Follow a log by asking again from the "
        "`offset` it gave while `live` or `more` is true (a job still queued has no log yet, and "
        "is live)."
    ),
)
def logs(request, job_id: int):
    job, _may = get_job_for_user(request.user, job_id)
    if attempt_of(job, request) is None:  # not started yet: nothing to read, more to come
        return {"attempt": None, "replica": None, "replicas": [], "text": "", "offset": 0,
                "live": job.is_live, "more": False}  # fmt: skip
    _job, attempt, replica = log_of(request, job_id)
    text, after, live, more = read_on(attempt, replica, offset_of(request))
    return {
        "attempt": attempt.number,
        "replica": replica["name"],
        "replicas": [r["name"] for r in attempt.replicas],
        "text": text,
        "offset": after,
        "live": live,
        "more": more,
    }


@router.get("/{int:job_id}/usage", response=UsageOut, summary=gettext_noop("A run's resource use"))
def usage(request, job_id: int):
    job, _may = get_job_for_user(request.user, job_id)
    attempt = attempt_of(job, request)
    if attempt is None:
        return {"attempt": None, "samples": []}
    fields = ("replica", "at", "cpu_percent", "memory_mib", "accelerator_util",
              "accelerator_memory_mib")  # fmt: skip
    return {"attempt": attempt.number,
            "samples": list(attempt.samples.order_by("at").values(*fields))}  # fmt: skip
