"""Attempts through the backend: start, follow, stop (SPEC E1, F7, O6; Q1 statuses); their
end and what it makes of the job is jobs.execution.settle.

Everything here is called from Celery tasks (and the stop view); every job move goes through
jobs.lifecycle, so a job another worker moved first is left alone. The backend's calls all
return at once: nothing here waits for a job to end.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext_noop

from console.words import said
from jobs import lifecycle
from jobs.backend import attempt_backend
from jobs.execution import cluster_events, settle, step_events, workloads
from jobs.faults import prechecks
from jobs.models import Attempt, Job, JobEvent, JobType, Phase, SubTask, UsageSample
from resources import clusters
from resources.backends.base import (
    BackendError,
    BackendUnavailable,
    UnknownWorkload,
    WorkloadState,
    WorkloadStatus,
)

log = logging.getLogger(__name__)

# After submitting, how long launch() follows its attempts before leaving them to the beat:
# a free job is then "running" on the page within a few seconds of its submit.
FOLLOW_SECONDS = 2.0
# A job admitted this long ago and not launched yet was missed by its admission's worker.
LAUNCH_GRACE_SECONDS = 10
# An attempt whose submit has not finished after this long never will (its worker died).
SUBMIT_SECONDS = 180


# --- start ---------------------------------------------------------------------------------


def launch(job_ids: list[int]) -> list[Attempt]:
    """Start the jobs an admission pass admitted, then follow them briefly."""
    started = [a for a in (start(pk) for pk in job_ids) if a is not None]
    deadline = time.monotonic() + FOLLOW_SECONDS
    pending = list(started)
    while pending and time.monotonic() < deadline:
        time.sleep(0.1)
        pending = [a for a in pending if follow(a) == Attempt.State.STARTING]
    return started


def start(job_id: int, subtask: SubTask | None = None) -> Attempt | None:
    """The job's next attempt (a batch job's first sub-task unless ``subtask`` says which).
    None when the job is not admitted any more (stopped or deleted meanwhile) or could not
    be launched (it then ends as error with the reason)."""
    job = Job.objects.select_related("image", "spec", "owner").filter(pk=job_id).first()
    if job is None or (subtask is None and job.phase != Phase.ADMITTED):
        return None
    if subtask is None and job.job_type == JobType.BATCH:
        subtask = _first_unfinished(job)
    number = (job.attempts.aggregate(n=Max("number"))["n"] or 0) + 1
    try:
        workload = workloads.build(job, number, subtask)
        cluster_id = workloads.cluster_of(job)
        runner = clusters.backend_of(cluster_id)
    except (ValueError, KeyError, BackendError) as exc:
        _fail_to_launch(job, str(exc))
        return None
    in_workload = runner.prechecks_in_workload
    if job.phase == Phase.ADMITTED and not prechecks.passed(job, workload, in_workload=in_workload):
        return None  # its nodes are isolated; it is back in the queue, or ended as error
    attempt = _new_attempt(job, number, subtask, workload, runner.name, cluster_id)
    if attempt is None or not _submit(attempt, workload, runner):
        return None
    attempt.submitted_at = timezone.now()
    Attempt.objects.filter(pk=attempt.pk).update(submitted_at=attempt.submitted_at)
    if subtask is not None and job.job_type == JobType.BATCH:
        _record_subtask_started(job, subtask)
    # A stop that came between the attempt's row and the submit found nothing to stop.
    attempt.refresh_from_db(fields=["stop_cause"])
    if attempt.stop_cause:
        runner.stop(attempt.workload_id, job.graceful_shutdown_seconds)
    return attempt


def _first_unfinished(job: Job) -> SubTask | None:
    """A batch job's first sub-task not done yet: after a fault, the sub-tasks that
    succeeded are not run again."""
    done = job.attempts.filter(state=Attempt.State.SUCCEEDED).values("subtask_id")
    return job.subtasks.exclude(pk__in=done).order_by("index").first()


def _new_attempt(job: Job, number: int, subtask, workload, backend: str, cluster_id):
    """The attempt's row, and the job moved to starting (with the nodes it starts on) if it
    was admitted. None when another worker moved the job first."""
    replicas = [
        {
            "name": r.name,
            "label": r.label,
            "node": r.node,
            "runs_entry": r.runs_entry,
            "cpu": r.cpu_millicores,
            "memory": r.memory_mib,
        }
        for r in workload.replicas
    ]
    with transaction.atomic():
        if job.phase == Phase.ADMITTED:
            nodes = ", ".join(dict.fromkeys(r.node for r in workload.replicas))
            message = said(gettext_noop("Starting on %(nodes)s."), nodes=nodes)
            if not lifecycle.move(job, Phase.STARTING, message):
                return None
        return Attempt.objects.create(
            job=job,
            number=number,
            subtask=subtask,
            backend=backend,
            cluster_id=cluster_id,
            workload_id=workload.id,
            replicas=replicas,
        )


def _record_subtask_started(job: Job, subtask: SubTask) -> None:
    count = job.subtasks.count()
    lifecycle.record(
        job,
        said(
            gettext_noop("Sub-task %(i)s of %(n)s started: %(command)s"),
            i=subtask.index + 1,
            n=count,
            command=subtask.command[:300],
        ),
    )


def _submit(attempt: Attempt, workload, runner) -> bool:
    """Hand the workload to its backend. A cluster that does not answer is asked again by
    the sync (the submit is idempotent) until SUBMIT_SECONDS; anything else ends the
    attempt, with the reason as the job's last event."""
    try:
        runner.submit(workload)
    except BackendUnavailable as exc:
        tries = attempt.submit_tries + 1
        Attempt.objects.filter(pk=attempt.pk).update(submit_tries=tries, reason=str(exc)[:500])
        attempt.submit_tries = tries
        if tries == 1:
            lifecycle.record(
                attempt.job,
                said(
                    gettext_noop("The cluster does not answer (%(reason)s): trying again."),
                    reason=str(exc),
                ),
                kind=JobEvent.Kind.WARNING,
            )
        return False
    except (BackendError, ValueError, OSError) as exc:
        settle.end(attempt, WorkloadStatus(WorkloadState.FAILED, reason=f"could not start: {exc}"))
        return False
    return True


def _submit_again(attempt: Attempt) -> None:
    """Retry a submit the cluster did not answer (with a growing pause between tries), or
    one whose worker died before it was recorded."""
    waited = sum(min(30, 2**i) for i in range(1, attempt.submit_tries + 1))
    if timezone.now() - attempt.created_at < timedelta(seconds=waited):
        return
    job = attempt.job
    workload = workloads.build(job, attempt.number, attempt.subtask)
    unanswered = attempt.submit_tries
    if _submit(attempt, workload, attempt_backend(attempt)):
        now = timezone.now()
        Attempt.objects.filter(pk=attempt.pk).update(submitted_at=now, reason="")
        attempt.submitted_at, attempt.reason = now, ""
        if unanswered:
            lifecycle.record(job, said(gettext_noop("The cluster answers again: submitted.")))


def _fail_to_launch(job: Job, reason: str) -> None:
    message = said(gettext_noop("Could not launch: %(reason)s"), reason=reason)
    settle.close(job, Phase.ERROR, message, JobEvent.Kind.ERROR)


# --- follow --------------------------------------------------------------------------------


def sync() -> int:
    """Follow every live attempt once: start, end, expiry, usage. Returns how many.

    Jobs admitted a while ago and still not launched (their worker died between the
    admission and the launch) are launched here."""
    forgotten = timezone.now() - timedelta(seconds=LAUNCH_GRACE_SECONDS)
    for pk in Job.objects.filter(phase=Phase.ADMITTED, admitted_at__lt=forgotten).values_list(
        "pk", flat=True
    ):
        start(pk)
    settle.settle_left()  # jobs whose worker died while ending their attempt
    live = list(Attempt.objects.filter(ended_at__isnull=True).select_related("job", "subtask"))
    unreachable: dict[int, str] = {}
    for cluster_id in {a.cluster_id for a in live if a.cluster_id is not None}:
        try:  # one look at the whole cluster; each poll below reads from it
            clusters.backend_of(cluster_id).refresh()
        except BackendError as exc:
            unreachable[cluster_id] = str(exc)
    samples: dict[int, list[UsageSample]] = {}
    for attempt in live:
        if attempt.cluster_id in unreachable:
            cluster_events.unreachable(attempt, unreachable[attempt.cluster_id])
            continue
        try:
            follow(attempt, samples)
        except BackendError as exc:  # the backend did not answer: try again next time
            log.warning("cannot follow %s: %s", attempt.workload_id, exc)
    _save_samples(samples)
    return len(live)


def follow(attempt: Attempt, samples: dict[int, list[UsageSample]] | None = None) -> str:
    """One look at one attempt; returns its state afterwards. Its usage goes into
    ``samples`` when given (a sync pass saves them all at once), else is saved now."""
    if attempt.submitted_at is None:
        # Another worker is submitting it right now, or died doing so, or the cluster did
        # not answer the submit (then it is retried here).
        if timezone.now() - attempt.created_at > timedelta(seconds=SUBMIT_SECONDS):
            reason = (
                f"the cluster never accepted it ({attempt.reason})"
                if attempt.submit_tries
                else "it was never started (the worker launching it stopped)"
            )
            settle.end(attempt, WorkloadStatus(WorkloadState.FAILED, reason=reason))
        elif attempt.submit_tries or timezone.now() - attempt.created_at > timedelta(
            seconds=LAUNCH_GRACE_SECONDS
        ):
            # Not answered, or its worker died mid-submit: submits are idempotent.
            _submit_again(attempt)
        return attempt.state
    try:
        status = attempt_backend(attempt).poll(attempt.workload_id)
    except UnknownWorkload as exc:
        if attempt.stop_cause:  # deleted on our request: every process has ended
            status = WorkloadStatus(WorkloadState.STOPPED)
        else:
            status = WorkloadStatus(
                WorkloadState.FAILED, reason=str(exc) or "the backend lost track of it"
            )
    prechecks.tell(attempt, status)  # those a cluster ran in the pods (SPEC F1)
    step_events.tell(attempt, status)  # data preparation, lifecycle scripts (SPEC J19, J23)
    if status.state.finished:
        settle.end(attempt, status)
        return attempt.state
    if attempt.cluster_id is not None:
        cluster_events.why(attempt, status)
    if status.state == WorkloadState.RUNNING and attempt.state == Attempt.State.STARTING:
        _running(attempt)
    if attempt.state == Attempt.State.RUNNING:
        # The job follows its attempt (also when the worker that marked the attempt running
        # died before it moved the job); a no-op once the job is running.
        settle.job_running(attempt.job, attempt)
        _expire_if_due(attempt)
        taken = _sample(attempt)
        if taken is not None:
            if samples is None:
                _save_samples({attempt.pk: taken})
            else:
                samples[attempt.pk] = taken
    return attempt.state


def _running(attempt: Attempt) -> None:
    now = timezone.now()
    if not Attempt.objects.filter(pk=attempt.pk, state=Attempt.State.STARTING).update(
        state=Attempt.State.RUNNING, running_at=now
    ):
        attempt.refresh_from_db()
        return
    attempt.state, attempt.running_at = Attempt.State.RUNNING, now


def _expire_if_due(attempt: Attempt) -> None:
    # The job was read with the attempt at the start of this pass; the update below checks
    # the deadline again in the database, so a duration extended since then is respected.
    job, now = attempt.job, timezone.now()
    if attempt.stop_cause or job.deadline is None or job.deadline > now:
        return
    if Attempt.objects.filter(pk=attempt.pk, stop_cause="", job__deadline__lte=now).update(
        stop_cause=Attempt.StopCause.EXPIRY
    ):
        job.refresh_from_db(fields=["deadline", "phase", "duration_hours"])
        attempt.stop_cause = Attempt.StopCause.EXPIRY
        lifecycle.record(
            job,
            said(
                gettext_noop(
                    "Its duration of %(hours)s h is over: stopping it (SIGTERM, then killed "
                    "after %(seconds)s s)."
                ),
                hours=job.duration_hours,
                seconds=job.graceful_shutdown_seconds,
            ),
            kind=JobEvent.Kind.WARNING,
        )
        attempt_backend(attempt).stop(attempt.workload_id, job.graceful_shutdown_seconds)


def _sample(attempt: Attempt) -> list[UsageSample] | None:
    """The attempt's usage now (not saved yet), or None when no sample is due."""
    now = timezone.now()
    due = attempt.sampled_at is None or now - attempt.sampled_at >= timedelta(
        seconds=settings.USAGE_SECONDS
    )
    if not due:
        return None
    attempt.sampled_at = now
    return [
        UsageSample(
            attempt=attempt,
            replica=s.replica,
            at=now,
            cpu_percent=round(s.cpu_percent, 1),
            memory_mib=round(s.memory_mib, 1),
            accelerator_util=s.accelerator_util,
            accelerator_memory_mib=s.accelerator_memory_mib,
        )
        for s in attempt_backend(attempt).usage(attempt.workload_id)
    ]


def _save_samples(samples: dict[int, list[UsageSample]]) -> None:
    """Per attempt, its samples: two statements for a whole pass, whatever the number of
    attempts (a pass over a thousand running jobs must not cost thousands of round trips)."""
    if not samples:
        return
    UsageSample.objects.bulk_create([s for taken in samples.values() for s in taken])
    Attempt.objects.filter(pk__in=samples).update(sampled_at=timezone.now())


# --- a worker (re)starts ---------------------------------------------------------------------


def recover() -> int:
    """Kill orphans the backend finds and follow what is left; returns the orphans killed."""
    found = attempt_backend().recover()  # the local backend's orphans; clusters keep their own
    sync()
    return sum(item.killed_processes for item in found)
