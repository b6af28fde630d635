"""The job state machine, in one place (DESIGN "Job lifecycle").

Messages and reasons are stored in English; a :class:`console.words.Said` one also keeps its
message id and parameters, so that each reader sees it in their language.

Every move is a conditional UPDATE from the phase the caller saw (or, for many jobs at once,
an UPDATE of the rows locked while still in it), so two workers can never both move a job;
the winner writes the event.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from console import rows
from console.words import Said
from jobs.models import STATUS_OF_PHASE, Job, JobEvent, Notice, Phase

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


@dataclass(slots=True)
class Moving:
    """A job as :func:`move_all` needs it: its id, the phase its caller saw, its name. An
    admission pass moves hundreds of jobs it knows this much of; a model instance each
    (every field's default worked out) cost a third of writing the admissions."""

    pk: int
    phase: str
    name: str


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
    _check(job, to)
    now = timezone.now()
    values = _values(to, fields, now)
    with transaction.atomic():
        moved = Job.objects.filter(pk=job.pk, phase=job.phase).update(**values)
        if not moved:
            return False
        JobEvent.objects.create(**_event(job, now, kind, to, message, item, actor, moved=True))
    for name, value in values.items():
        setattr(job, name, value)
    return True


def move_all[J: (Job, Moving)](moves: Iterable[tuple[J, str, dict]], to: str) -> list[J]:
    """What :func:`move` does, for many jobs at once: each ``(job, message, fields)`` moves
    from the phase it has in memory to ``to``, in one transaction and a few statements
    (an admission pass admits hundreds). Returns the jobs moved; the others had been moved
    by someone else first and are left alone.

    The jobs still in the phase their caller saw are locked first (``FOR UPDATE``): a
    concurrent :func:`move` of one of them waits, then finds it moved and writes nothing.
    Every move must set the same fields (their values may differ)."""
    moves = list(moves)
    for job, _, _ in moves:
        _check(job, to)
    now = timezone.now()
    with transaction.atomic():
        seen: dict[str, list[int]] = defaultdict(list)
        for job, _, _ in moves:
            seen[job.phase].append(job.pk)
        still: set[int] = set()
        for phase, ids in seen.items():
            locked = Job.objects.select_for_update().filter(pk__in=ids, phase=phase)
            still.update(locked.values_list("pk", flat=True))
        moved = [(job, message, _values(to, fields, now)) for job, message, fields in moves
                 if job.pk in still]  # fmt: skip
        rows.update(Job, {job.pk: values for job, _, values in moved})
        rows.insert(JobEvent, (_event(job, now, JobEvent.Kind.INFO, to, message, "", None, True)
                               for job, message, _ in moved))  # fmt: skip
    for job, _, values in moved:
        if isinstance(job, Moving):
            job.phase = to
            continue
        for name, value in values.items():
            setattr(job, name, value)
    return [job for job, _, _ in moved]


def _check(job: Job | Moving, to: str) -> None:
    if to not in ALLOWED.get(job.phase, set()):
        raise IllegalTransition(f"{job.phase} -> {to}")


def _values(to: str, fields: dict, now) -> dict:
    """The columns a move to ``to`` writes: phase, status and the caller's fields."""
    values = {"phase": to, "status": STATUS_OF_PHASE[to], **fields}
    if "reason" in values:  # kept in English; worded per reader when it was said
        reason = values["reason"]
        values["reason_said"] = reason.as_json() if isinstance(reason, Said) else None
        values["reason"] = str(reason)[:500]
    if to in FINAL:
        values.setdefault("finished_at", now)
    return values


# What a move to each phase tells the job's owner (SPEC I4).
NOTICE_OF_MOVE = {
    Phase.RUNNING: Notice.STARTED,
    Phase.SUCCEEDED: Notice.SUCCEEDED,
    Phase.ERROR: Notice.FAILED,
    Phase.RESTARTING: Notice.FAULT,
    Phase.RESUMING: Notice.FAULT,
    Phase.STOPPED: Notice.STOPPED,
    Phase.EXPIRED: Notice.STOPPED,
}


def notice_of(moved: bool, to: str, kind: str, item: str) -> str:
    """What an event tells its job's owner: a move by where it goes; of the other events,
    a job's boards reclaimed (its warning, not the claimant's) and an idle warning."""
    if moved:
        return NOTICE_OF_MOVE.get(to, "")
    if item == "reclaim" and kind == JobEvent.Kind.WARNING:
        return Notice.PREEMPTED
    return Notice.IDLE if item == "idle" else ""


def _event(job: Job | Moving, now, kind: str, to: str, message: str, item: str, actor,
           moved: bool = False) -> dict:  # fmt: skip
    """A JobEvent's fields."""
    return {
        "job_id": job.pk, "at": now, "kind": kind, "phase": to, "message": str(message)[:1000],
        "said": _said(message), "item": item, "actor_id": getattr(actor, "pk", None),
        "notice": notice_of(moved, to, kind, item),
    }  # fmt: skip


def record(job: Job, message: str, *, kind: str = JobEvent.Kind.INFO, item: str = "", actor=None):
    """An event that is not a transition (a precheck result, a changed duration…)."""
    return JobEvent.objects.create(
        **_event(job, timezone.now(), kind, job.phase, message, item, actor)
    )


def _said(message: str) -> dict | None:
    return message.as_json() if isinstance(message, Said) else None
