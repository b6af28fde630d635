"""The job state machine, in one place (DESIGN "Job lifecycle").

Messages and reasons are stored in English; a :class:`console.words.Said` one also keeps its
message id and parameters, so that each reader sees it in their language.

Every move is a conditional UPDATE from the phase the caller saw, so two workers can never
both move a job; the winner writes the event.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from console.words import Said
from jobs.models import STATUS_OF_PHASE, Job, JobEvent, Phase

ALLOWED: dict[str, set[str]] = {
    Phase.QUEUED: {Phase.ADMITTED, Phase.STOPPED, Phase.ERROR},
    Phase.ADMITTED: {Phase.STARTING, Phase.QUEUED, Phase.STOPPED, Phase.ERROR},
    Phase.STARTING: {
        Phase.RUNNING, Phase.ERROR, Phase.STOPPED, Phase.EXPIRED, Phase.SUCCEEDED,
        Phase.RESTARTING, Phase.RESUMING,
    },
    Phase.RUNNING: {
        Phase.SUCCEEDED, Phase.ERROR, Phase.STOPPED, Phase.EXPIRED, Phase.RESTARTING,
        Phase.RESUMING,
    },
    Phase.RESTARTING: {Phase.QUEUED, Phase.ERROR, Phase.STOPPED},
    Phase.RESUMING: {Phase.QUEUED, Phase.ERROR, Phase.STOPPED},
}  # fmt: skip
FINAL = {Phase.SUCCEEDED, Phase.ERROR, Phase.STOPPED, Phase.EXPIRED}


class IllegalTransition(ValueError):
    pass


def move(
    job: Job,
    to: str,
    message: str,
    *,
    kind: str = JobEvent.Kind.INFO,
    item: str = "",
    actor=None,
    **fields,
) -> bool:
    """Move ``job`` from the phase it has in memory to ``to``; False if someone else moved
    it first (nothing is written then). ``fields`` are saved in the same UPDATE."""
    if to not in ALLOWED.get(job.phase, set()):
        raise IllegalTransition(f"{job.phase} -> {to}")
    now = timezone.now()
    values = {"phase": to, "status": STATUS_OF_PHASE[to], **fields}
    if "reason" in values:  # kept in English; worded per reader when it was said
        reason = values["reason"]
        values["reason_said"] = reason.as_json() if isinstance(reason, Said) else None
        values["reason"] = str(reason)[:500]
    if to in FINAL:
        values.setdefault("finished_at", now)
    with transaction.atomic():
        moved = Job.objects.filter(pk=job.pk, phase=job.phase).update(**values)
        if not moved:
            return False
        JobEvent.objects.create(
            job=job, at=now, kind=kind, phase=to, message=str(message)[:1000],
            said=_said(message), item=item, actor=actor,
        )  # fmt: skip
    for name, value in values.items():
        setattr(job, name, value)
    return True


def record(job: Job, message: str, *, kind: str = JobEvent.Kind.INFO, item: str = "", actor=None):
    """An event that is not a transition (a precheck result, a changed duration…)."""
    return JobEvent.objects.create(
        job=job, kind=kind, phase=job.phase, message=str(message)[:1000], said=_said(message),
        item=item, actor=actor,
    )  # fmt: skip


def _said(message: str) -> dict | None:
    return message.as_json() if isinstance(message, Said) else None
