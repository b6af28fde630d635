"""Background work of the jobs app: the admission pass and the queue timeout (SPEC Q6)."""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from celery.signals import worker_ready
from django.utils import timezone

from console import limits
from console.db import release_pool
from console.words import counted, said
from jobs import lifecycle
from jobs.models import Job, JobEvent, Phase
from resources.backends.base import BackendError

log = logging.getLogger(__name__)


def fail_overdue_resubmissions(now=None) -> list[int]:
    """Q6: a job resubmitted after a fault that waits longer than the admin's timeout ends
    as error, with an event saying so."""
    now = now or timezone.now()
    minutes = limits.current().resubmit_queue_timeout_minutes
    overdue = Job.objects.filter(
        phase=Phase.QUEUED, resubmitted_at__lt=now - timedelta(minutes=minutes)
    )
    ended = []
    for job in overdue:
        message = said(
            counted(
                "Resubmitted after a fault, it waited more than %(n)s minute in the queue: the "
                "cluster has no room for it. Ended as error.",
                "Resubmitted after a fault, it waited more than %(n)s minutes in the queue: the "
                "cluster has no room for it. Ended as error.",
                "n",
            ),
            n=minutes,
        )
        if lifecycle.move(job, Phase.ERROR, message, kind=JobEvent.Kind.ERROR, reason=message):
            ended.append(job.pk)
    return ended


@shared_task
def admit() -> None:
    """One admission pass. Beat calls it every few seconds and views enqueue it on submit,
    stop and finish; a pass that finds another one running returns at once."""
    from jobs.admission.db import prune_queue_changes, run_pass

    fail_overdue_resubmissions()
    prune_queue_changes()
    result = run_pass()
    if result.admitted:
        log.info("admitted %s", result.admitted)
        from jobs import hooks

        for listener in hooks.admission_listeners:
            listener(result.admitted)


@shared_task
def sync_runs() -> int:
    """Follow every running attempt: started, ended, expired, resource use (beat, every few
    seconds)."""
    from jobs.execution import runs

    return runs.sync()


@shared_task
def watch_faults() -> list[int]:
    """Beat, every second: the performance and hang watch of running jobs' logs (SPEC F6;
    one query when no job asks for it), hardware inspection when its period is due
    (SPEC F2), and elastic jobs that may grow (SPEC F5). Returns the attempts interrupted."""
    from jobs.faults import elastic, inspection, watch

    interrupted = watch.watch()
    interrupted += inspection.inspect() if inspection.due() else []
    return interrupted + elastic.grow()


@shared_task
def sync_tools() -> dict[str, int]:
    """Beat: TensorBoards and JupyterLabs (SPEC O8, O9) checked, the idle ones stopped after
    the admin's time, the ended ones' folders removed."""
    from jobs.tools import service

    return service.sync()


@shared_task
def end_debugging() -> list[int]:
    """Beat, every minute: jobs kept for the debug terminal whose hours are over are freed."""
    from jobs.terminal import kept

    return kept.discard_expired()


@shared_task(autoretry_for=(BackendError,), retry_backoff=5, max_retries=8)
def clean_up(workload_id: str, cluster_id: int | None = None) -> None:
    """Kill what is left of a deleted job's workload and remove its files and logs (retried
    while its cluster does not answer)."""
    from resources.clusters import backend_of

    backend_of(cluster_id).cleanup(workload_id)


@shared_task(autoretry_for=(BackendError,), retry_backoff=2, max_retries=10)
def stop_workload(workload_id: str, cluster_id: int | None, graceful_seconds: int) -> None:
    """Stop a workload on its cluster (retried while the cluster does not answer)."""
    from resources.clusters import backend_of

    backend_of(cluster_id).stop(workload_id, graceful_seconds)


@worker_ready.connect
def _recover(**_kwargs) -> None:
    """A worker (re)starts: jobs kept running without it (their supervisors outlive it);
    orphans whose supervisor died are killed, and every attempt is followed again."""
    from jobs.execution import runs

    try:
        killed = runs.recover()
    except Exception:  # a worker must start even if the backend does not answer yet
        log.exception("recovering running jobs failed")
        return
    finally:
        release_pool()
    if killed:
        log.warning("killed %s orphan process(es) left from before", killed)
