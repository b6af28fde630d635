"""From an admin's Cluster record to the backend that talks to it, and back.

One backend object per cluster and process, made anew when the record changes (its
``updated_at``), so a worker picks up new credentials without a restart. The backends
package knows no ORM: this module hands it plain data (a Connection, a ClusterTarget).
"""

from __future__ import annotations

from django.conf import settings

from console.sealed import Unreadable
from resources.backends import local
from resources.backends.base import BackendError
from resources.backends.k8s_api import Connection
from resources.backends.k8s_check import Check
from resources.backends.k8s_render import ClusterTarget
from resources.backends.kubernetes import KubernetesBackend
from resources.models import Cluster

_BACKENDS: dict[int, tuple[object, KubernetesBackend]] = {}


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
        return local()
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        raise BackendError(f"cluster #{cluster_id} no longer exists")
    return backend_for(cluster)


def check(cluster: Cluster) -> Check:
    """Test the connection (the settings page's button); never raises a BackendError."""
    try:
        return backend_for(cluster).check()
    except BackendError as error:
        return Check(problems=(str(error),))
