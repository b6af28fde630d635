"""An attempt's end and what it makes of the job (SPEC F3, F7, O6; Q1 statuses).

Ending is two steps: the attempt's row is marked ended (one conditional UPDATE, so only one
worker ends it), then the job is *settled*: it ends, goes back to the queue after a fault,
or starts a batch's next sub-task. A worker killed between the two leaves a job that says
*starting* or *running* with nothing left to run; the sync settles such a job once its last
attempt has been over for SETTLE_GRACE_SECONDS. One lock per job lets only one worker settle
it, and a settle first checks the job still needs one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone
from django.utils.translation import gettext_noop

from console.words import said
from jobs import hooks, lifecycle
from jobs.faults import diagnosis, recovery
from jobs.models import Attempt, Job, JobEvent, JobType, Phase, SubTask
from jobs.operations import release
from resources.backends.base import ReplicaState, WorkloadState, WorkloadStatus

# An ended attempt whose job is still live this long after is one a killed worker left.
SETTLE_GRACE_SECONDS = 20
# pg advisory lock namespace of settling a job ("set" in ASCII); the second key is the job.
SETTLE_LOCK = 0x736574
LIVE = (Phase.STARTING, Phase.RUNNING)

_ATTEMPT_STATE = {
    WorkloadState.SUCCEEDED: Attempt.State.SUCCEEDED,
    WorkloadState.FAILED: Attempt.State.FAILED,
    WorkloadState.STOPPED: Attempt.State.STOPPED,
}
_WORKLOAD_STATE = {attempt: workload for workload, attempt in _ATTEMPT_STATE.items()}


def end(attempt: Attempt, status: WorkloadStatus) -> None:
    """The attempt has ended: record it, then settle its job."""
    # The replica that failed, not the ones stopped because it did (SIGTERM: 143), a fault
    # exit code first: a job settled later from this row alone is diagnosed alike.
    failed = [r for r in status.replicas if r.state == ReplicaState.FAILED]
    exit_code = (
        diagnosis.telling_exit_code(failed)
        if failed
        else (0 if status.state == "succeeded" else None)
    )
    if not Attempt.objects.filter(pk=attempt.pk, ended_at__isnull=True).update(
        state=_ATTEMPT_STATE[status.state],
        ended_at=timezone.now(),
        exit_code=exit_code,
        reason=status.reason[:500],
    ):
        return  # another worker ended it
    attempt.refresh_from_db()
    with _settling(attempt.job_id, wait=True):
        _settle(attempt, status)


def settle_left() -> int:
    """Settle the jobs whose worker died between ending their attempt and settling it;
    returns how many. One query when there are none."""
    over = timezone.now() - timedelta(seconds=SETTLE_GRACE_SECONDS)
    attempts = Attempt.objects.filter(job=OuterRef("pk"))
    left = (
        Job.objects.filter(Exists(attempts), phase__in=LIVE)
        .exclude(Exists(attempts.filter(ended_at__isnull=True)))
        .exclude(Exists(attempts.filter(ended_at__gte=over)))
        .values_list("pk", flat=True)
    )
    settled = 0
    for job_id in left:
        with _settling(job_id, wait=False) as mine:
            attempt = Attempt.objects.filter(job_id=job_id).order_by("-number").first()
            if mine and attempt is not None:
                status = WorkloadStatus(_WORKLOAD_STATE[attempt.state], reason=attempt.reason)
                settled += _settle(attempt, status)
    return settled


@contextlib.contextmanager
def _settling(job_id: int, *, wait: bool) -> Iterator[bool]:
    """Hold the job's settle lock (a session lock: a killed worker's goes with its
    connection). Yields False when ``wait`` is False and another worker holds it."""
    with connection.cursor() as cursor:
        if wait:
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", [SETTLE_LOCK, job_id])
            mine = True
        else:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [SETTLE_LOCK, job_id])
            mine = cursor.fetchone()[0]
    try:
        yield mine
    finally:
        if mine:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [SETTLE_LOCK, job_id])


def _settle(attempt: Attempt, status: WorkloadStatus) -> bool:
    """End the job, requeue it after a fault or start its next sub-task; False when that
    was done already (the job moved on, or has a newer attempt)."""
    job = Job.objects.get(pk=attempt.job_id)
    newer = job.attempts.filter(number__gt=attempt.number).exists()
    if job.phase not in LIVE or newer or job.attempts.filter(ended_at__isnull=True).exists():
        return False
    if status.state == WorkloadState.SUCCEEDED and not attempt.stop_cause:
        job_running(job, attempt)  # it ran, even if it ended before a poll saw it running
        following = _next_subtask(job, attempt)
        if following is not None:
            for start in hooks.subtask_starters:
                start(job.pk, following)
            return True
    # A job that ended before any poll saw it running still started (SPEC Q1 times).
    started = {}
    if job.started_at is None:
        begun = attempt.running_at or attempt.created_at
        started = {"started_at": begun, "deadline": begun + timedelta(hours=job.duration_hours)}
    # What recovery records of a fault goes with the job's move, or neither does: a worker
    # killed in between would leave a fault on record that the next one records again.
    with transaction.atomic():
        recovered = recovery.on_end(job, attempt, status)
        if recovered != recovery.REQUEUED:
            close(job, *(recovered or _outcome(job, attempt, status)), **started)
    return True


def close(job: Job, to: str, message: str, kind: str, **fields) -> None:
    """The job's last move; its nodes go back to the queue. An error's message is its
    reason."""
    reason = message if kind == JobEvent.Kind.ERROR else ""
    with transaction.atomic():
        if lifecycle.move(job, to, message, kind=kind, reason=reason, **fields):
            release(job)
    transaction.on_commit(hooks.queue_changed)


def job_running(job: Job, attempt: Attempt) -> None:
    """The job's first attempt is running: its duration counts from now (SPEC O6)."""
    if job.phase != Phase.STARTING:
        return
    now = timezone.now()
    names = ", ".join(r["name"] for r in attempt.replicas)
    lifecycle.move(
        job,
        Phase.RUNNING,
        said(gettext_noop("Running: %(names)s."), names=names),
        started_at=job.started_at or now,  # a resumed job keeps its first start
        deadline=now + timedelta(hours=job.duration_hours),
    )


def _next_subtask(job: Job, attempt: Attempt) -> SubTask | None:
    if job.job_type != JobType.BATCH or attempt.subtask is None:
        return None
    return job.subtasks.filter(index__gt=attempt.subtask.index).order_by("index").first()


def _outcome(job: Job, attempt: Attempt, status: WorkloadStatus) -> tuple[str, str, str]:
    if attempt.stop_cause == Attempt.StopCause.EXPIRY:
        message = said(gettext_noop("Expired: its duration ran out and its processes ended."))
        return Phase.EXPIRED, message, "warning"
    if attempt.stop_cause == Attempt.StopCause.IDLE:
        message = said(gettext_noop("Stopped as idle: every process has ended."))
        return Phase.STOPPED, message, "warning"
    if attempt.stop_cause == Attempt.StopCause.USER or status.state == WorkloadState.STOPPED:
        return Phase.STOPPED, said(gettext_noop("Stopped: every process has ended.")), "info"
    if status.state == WorkloadState.SUCCEEDED:
        return Phase.SUCCEEDED, said(gettext_noop("Succeeded.")), "info"
    reason = status.reason or "it failed"  # the backend's words (plain English)
    if job.job_type == JobType.BATCH and attempt.subtask is not None:
        index = attempt.subtask.index + 1
        message = said(
            gettext_noop("Failed in sub-task %(i)s: %(reason)s."), i=index, reason=reason
        )
        return Phase.ERROR, message, "error"
    return Phase.ERROR, said(gettext_noop("Failed: %(reason)s."), reason=reason), "error"
