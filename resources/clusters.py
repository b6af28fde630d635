"""From an admin's Cluster record to the backend that talks to it, and back.

One backend object per cluster and process, made anew when the record changes (its
``updated_at``), so a worker picks up new credentials without a restart. The backends
package knows no ORM: this module hands it plain data (a Connection, a ClusterTarget).
"""

from __future__ import annotations

import time

from django.conf import settings
from django.db.models.signals import post_save
from django.dispatch import receiver

from console.sealed import Unreadable
from resources.backends import local_backend
from resources.backends.base import BackendError
from resources.backends.kubernetes.api import Connection
from resources.backends.kubernetes.backend import KubernetesBackend
from resources.backends.kubernetes.check import Check
from resources.backends.kubernetes.render import ClusterTarget
from resources.models import Cluster

_BACKENDS: dict[int, tuple[object, KubernetesBackend]] = {}
# How long a backend is used without looking at its cluster's record again: a sync pass
# follows every live attempt, and one read of the record per pass (not per attempt) is enough
# to pick up an admin's change within a few seconds.
RECORD_SECONDS = 2.0
_LOOKED: dict[int, float] = {}


def connection_of(cluster: Cluster) -> Connection:
    try:
        if cluster.connection == Cluster.Connection.TOKEN:
            return Connection(
                "token", server=cluster.api_url, ca=cluster.ca_certificate, token=cluster.token()
            )
        if cluster.connection == Cluster.Connection.KUBECONFIG:
            return Connection(
                "kubeconfig", kubeconfig=cluster.kubeconfig(), context=cluster.context
            )
    except Unreadable:
        raise BackendError(
            f"the credentials of cluster {cluster.name} cannot be read (the console's key "
            "changed): enter them again in its settings"
        ) from None
    return Connection("in_cluster")


def target_of(cluster: Cluster) -> ClusterTarget:
    return ClusterTarget(
        namespace=cluster.namespace,
        queue=cluster.queue,
        accelerator_resource=cluster.accelerator_resource,
        storage_root=str(settings.STORAGE_ROOT),
        storage_claim=cluster.storage_claim,
        storage_host_path=cluster.storage_host_path,
    )


def backend_for(cluster: Cluster) -> KubernetesBackend:
    known = _BACKENDS.get(cluster.pk)
    if known is not None and known[0] == cluster.updated_at:
        return known[1]
    backend = KubernetesBackend(
        connection_of(cluster),
        target_of(cluster),
        logs_dir=settings.CLUSTER_LOGS_DIR / str(cluster.pk),
        prometheus=cluster.prometheus_url,
    )
    _BACKENDS[cluster.pk] = (cluster.updated_at, backend)
    return backend


def backend_of(cluster_id: int | None):
    """The backend of an attempt or a node: its cluster's, or the local backend."""
    if cluster_id is None:
        return local_backend()
    known = _BACKENDS.get(cluster_id)
    if known is not None and time.monotonic() - _LOOKED.get(cluster_id, 0.0) < RECORD_SECONDS:
        return known[1]
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        raise BackendError(f"cluster #{cluster_id} no longer exists")
    _LOOKED[cluster_id] = time.monotonic()
    return backend_for(cluster)


@receiver(post_save, sender=Cluster)
def _changed(sender, instance: Cluster, **kwargs) -> None:
    _LOOKED.pop(instance.pk, None)  # this process reads the new record at once


def check(cluster: Cluster) -> Check:
    """Test the connection (the settings page's button); never raises a BackendError."""
    try:
        return backend_for(cluster).check()
    except BackendError as error:
        return Check(problems=(str(error),))
