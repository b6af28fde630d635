"""Stopping a job's processes (SPEC F7) and forgetting a deleted job's workloads: on this
machine at once, on a cluster through the worker."""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from console.celery import send
from console.words import said
from jobs import lifecycle
from jobs.backend import stop_attempt
from jobs.models import Attempt, Job
from jobs.operations import NotApplicable


def request_stop(job: Job, user) -> bool:
    """Stop a job's processes: SIGTERM now, SIGKILL after its graceful time (SPEC F7); the
    job ends as *stopped* once every process has ended. False when it has none (not
    launched yet): jobs.operations then stops it at once."""
    attempt = job.attempts.filter(ended_at__isnull=True).order_by("-number").first()
    if attempt is None:
        return False
    # A person's stop wins over a fault's or a growth's: the job then ends as stopped.
    if attempt.stop_cause in (Attempt.StopCause.USER, Attempt.StopCause.EXPIRY,
                              Attempt.StopCause.IDLE):  # fmt: skip
        raise NotApplicable(_("The job is already stopping."))
    Attempt.objects.filter(pk=attempt.pk).update(stop_cause=Attempt.StopCause.USER)
    lifecycle.record(
        job,
        said(
            gettext_noop(
                "Stop requested by %(user)s: SIGTERM now, killed after %(seconds)s s if still "
                "running."
            ),
            user=user,
            seconds=job.graceful_shutdown_seconds,
        ),
        actor=user,
    )
    seconds = job.graceful_shutdown_seconds
    transaction.on_commit(lambda: _stop_now(attempt, seconds))
    return True


def _stop_now(attempt: Attempt, seconds: int) -> None:
    stop_attempt(attempt, seconds)
    send("jobs.tasks.sync_runs", countdown=1)


def forget(job: Job) -> None:
    """A deleted job's workloads: cleaned up once its graceful time has passed, or at once
    for an attempt that has ended already (nothing of it runs any more)."""
    graceful = job.graceful_shutdown_seconds + 5
    attempts = job.attempts.values_list("workload_id", "cluster_id", "ended_at")
    for workload, cluster, ended_at in attempts:
        seconds = 0 if ended_at else graceful
        transaction.on_commit(
            lambda w=workload, c=cluster, s=seconds: send("jobs.tasks.clean_up", w, c, countdown=s)
        )
