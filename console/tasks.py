"""Site-wide background tasks."""

from celery import shared_task
from celery.signals import worker_ready

from console.db import release_pool
from console.models import Heartbeat


@shared_task
def heartbeat() -> None:
    """Run by beat through the worker: proves the scheduler, broker and worker all work."""
    Heartbeat.beat(Heartbeat.SCHEDULER)
    Heartbeat.beat(Heartbeat.WORKER)


@worker_ready.connect
def worker_started(**kwargs) -> None:
    try:
        Heartbeat.beat(Heartbeat.WORKER)
    finally:
        release_pool()
