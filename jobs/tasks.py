"""The jobs app's Celery tasks: what beat runs and what pages send. Nothing in the product
imports this module (code below names a task to send it), so the work itself lives in the
rooms below: the admission pass in jobs.admission.admit, runs in jobs.execution."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready

from console.celery import send
from console.db import release_pool
from resources.backends.base import BackendError

log = logging.getLogger(__name__)


@shared_task
def admit() -> None:
    """One admission pass, then the reclaim of borrowed boards for the jobs it leaves waiting
    within their guarantee (SPEC G2). Beat calls it every few seconds and views enqueue it
    on submit, stop and finish; a pass that finds another one running returns at once."""
    from jobs.admission.admit import admission_pass
    from jobs.faults.reclaim import reclaim

    result = admission_pass()
    if result.ran and not result.quiet:  # a quiet pass changed nothing: neither would it
        reclaim()
    if result.unplanned:  # a long queue planned a part a pass: the next part at once,
        send("jobs.tasks.admit")  # once the pass and the reclaim have let the lock go
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
    (SPEC F2), elastic jobs that may grow (SPEC F5), and idle jobs every half minute (SPEC
    G5). Returns the attempts interrupted (or found idle)."""
    from jobs.faults import elastic, idle, inspection, watch

    interrupted = watch.watch()
    interrupted += inspection.inspect() if inspection.due() else []
    interrupted += idle.watch() if idle.due() else []
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
    from jobs.terminal import retention

    return retention.discard_expired()


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


@shared_task
def scan_notices() -> list[int]:
    """Job events worth telling, made into deliveries (SPEC I4; jobs/notify)."""
    from jobs.notify.scan import scan, stranded

    return scan() + stranded()


# A delivery that fails is tried again after 10 s, 20 s, 40 s… (at most 10 minutes apart),
# six times in all; then its log says it failed.
DELIVERY_TRIES = 6


@shared_task(bind=True, max_retries=DELIVERY_TRIES - 1)
def deliver(self, delivery_id: int) -> bool:
    from jobs.models import Delivery
    from jobs.notify.send import Undelivered, send

    delivery = (
        Delivery.objects.select_related("job", "job__owner", "job__project", "event")
        .filter(pk=delivery_id)
        .exclude(state=Delivery.State.SENT)
        .first()
    )
    if delivery is None:
        return False
    try:
        return send(delivery, last=self.request.retries >= self.max_retries)
    except Undelivered as exc:
        raise self.retry(exc=exc, countdown=min(600, 10 * 2**self.request.retries)) from exc


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
