"""Background work of the resources app."""

from __future__ import annotations

import logging
from pathlib import Path

from celery import shared_task
from django.conf import settings
from django.db import transaction

from console import limits
from resources import backends, clusters, hooks
from resources.backends.base import BackendError
from resources.backends.local import prepared as local_prepared
from resources.inventory import cordons
from resources.inventory.sync import SyncReport, sync
from resources.models import Cluster

log = logging.getLogger(__name__)


def sync_from_backend() -> SyncReport:
    """The local backend's nodes (none unless EXECUTION_BACKEND is "local")."""
    backend = backends.local_backend()
    return _changed(sync(backend.name, backend.inventory(), settings.KUBERNETES_POOL_LABEL))


def sync_cluster(cluster: Cluster) -> SyncReport:
    """The cluster's nodes into the inventory, and the console's isolations onto the cluster
    as cordons (resources.inventory.cordons)."""
    backend = clusters.backend_for(cluster)
    seen = backend.inventory()
    report = _changed(
        sync(
            backend.name,
            seen,
            settings.KUBERNETES_POOL_LABEL,
            cluster=cluster,
            default_pool=cluster.default_pool,
        )
    )
    cordons.reconcile(backend, cluster, seen)
    return report


@shared_task
def sync_cluster_now(cluster_id: int) -> None:
    """A node of the cluster was isolated or returned to service: its cordon follows now
    rather than at the next periodic sync."""
    cluster = Cluster.objects.live().select_related("default_pool").filter(pk=cluster_id).first()
    if cluster is None:
        return
    try:
        sync_cluster(cluster)
    except BackendError as exc:
        log.warning("sync of %s after an isolation skipped: %s", cluster.name, exc)


def _changed(report: SyncReport) -> SyncReport:
    if report.changed:
        for listener in hooks.inventory_listeners:
            transaction.on_commit(listener)
    return report


@shared_task
def sync_inventory() -> None:
    """Periodic: read every backend's nodes. A duplicate run finds nothing to change; a
    cluster that does not answer keeps its nodes as they were until it does."""
    sources = [("local", sync_from_backend)] + [
        (cluster.name, lambda c=cluster: sync_cluster(c))
        for cluster in Cluster.objects.live().select_related("default_pool")
    ]
    for name, run in sources:
        try:
            report = run()
        except BackendError as exc:
            log.warning("inventory sync of %s skipped: %s", name, exc)
            continue
        if report.changed:
            log.info("inventory sync of %s: %s", name, report)


@shared_task
def clean_prepared_data() -> list[str]:
    """Periodic (SPEC J19): the copies of datasets on the local nodes' fast storage unused for
    longer than the admin's ``data_prep_retention_days`` are deleted. A copy a live job uses
    is never deleted (its supervisor holds a lock on it; see local_prepared)."""
    days = limits.current().data_prep_retention_days
    removed = local_prepared.clean(Path(settings.NODE_CACHE_DIR), days * 86400)
    for path in removed:
        log.info("prepared data unused for %s days deleted: %s", days, path)
    return [str(path) for path in removed]


@shared_task
def mail_usage_digests() -> int:
    """Last week's usage to each project lead, once a week (resources.digest)."""
    from resources import digest

    return digest.send_all()


@shared_task
def mirror_queues() -> dict[str, str]:
    """Periodic, and after every quota change: each cluster's Volcano queues as the quotas
    say (resources.queue_mirror). A cluster that does not answer keeps its queues, and the
    reason is shown with the quotas."""
    from resources import queue_mirror

    done = {}
    for cluster in Cluster.objects.live():
        try:
            done[cluster.name] = str(queue_mirror.mirror(cluster))
        except (BackendError, ValueError) as exc:
            log.warning("queues of %s not mirrored: %s", cluster.name, exc)
            done[cluster.name] = f"failed: {exc}"
    return done
