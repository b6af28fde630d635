"""Background work of the resources app."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.db import transaction

from resources import backends, hooks
from resources.backends.base import BackendError
from resources.inventory import SyncReport, sync

log = logging.getLogger(__name__)


def sync_from_backend() -> SyncReport:
    backend = backends.active()
    report = sync(backend.name, backend.inventory(), settings.KUBERNETES_POOL_LABEL)
    if report.changed:
        for listener in hooks.inventory_listeners:
            transaction.on_commit(listener)
    return report


@shared_task
def sync_inventory() -> None:
    """Periodic: read the backend's nodes. A duplicate run finds nothing to change."""
    try:
        report = sync_from_backend()
    except BackendError as exc:
        log.warning("inventory sync skipped: %s", exc)
        return
    if report.changed:
        log.info("inventory sync: %s", report)
