"""What the Kubernetes flow tests share (no tests here): a cluster record for a fake (or a
real) API server, its nodes read into the inventory, a spec that fits them, and the
``fake`` and ``cluster`` fixtures."""

from __future__ import annotations

from decimal import Decimal

import pytest

from resources.models import AcceleratorModel, Cluster, NodeSpec
from resources.tasks import sync_cluster
from tests.resources.factories import ResourcePoolFactory
from tests.resources.k8s_fake import FakeKubernetes, node

A100 = {
    "nvidia.com/gpu.product": "A100",
    "nvidia.com/gpu.memory": "81920",
    "nvidia.com/cuda.driver.major": "535",
    "nvidia.com/cuda.driver.minor": "104",
}
NODES = [
    node(f"gpu-{i:02d}", cpu="32", memory="256Gi", extended={"nvidia.com/gpu": "4"}, labels=A100)
    for i in (1, 2)
]


def add_cluster(project, *, url: str, token: str, namespace: str = "ml", **fields) -> Cluster:
    """A cluster record (token connection) whose nodes go into a pool ``project`` may use;
    its nodes read into the inventory."""
    pool = ResourcePoolFactory(name=f"{namespace}-pool")
    pool.projects.add(project)
    cluster = Cluster(
        name=f"fake-{namespace}",
        connection=Cluster.Connection.TOKEN,
        api_url=url,
        namespace=namespace,
        default_pool=pool,
        storage_host_path=fields.pop("storage_host_path", "/srv/console-storage"),
        **fields,
    )
    cluster.set_token(token)
    cluster.save()
    sync_cluster(cluster)
    return cluster


def gpu_spec(name: str = "a100-1") -> NodeSpec:
    return NodeSpec.objects.create(
        name=name,
        cpu_millicores=2000,
        memory_mib=4096,
        boards=Decimal(1),
        accelerator_model=AcceleratorModel.objects.get(name="A100"),
    )


@pytest.fixture
def own_admissions(monkeypatch):
    """The test runs the admission pass itself: the session's worker must not race it."""
    from jobs import hooks
    from resources import hooks as resource_hooks

    monkeypatch.setattr(hooks, "queue_listeners", [])
    monkeypatch.setattr(resource_hooks, "inventory_listeners", [])


@pytest.fixture
def fake():
    """The fake API server with the two GPU nodes, graceful periods 20 times faster."""
    with FakeKubernetes(NODES, auto=True) as api:
        api.time_scale = 0.05
        yield api


@pytest.fixture
def cluster(fake, vision, transactional_db, settings, tmp_path):
    """A cluster record for ``fake``, its nodes in a pool vision may use."""
    settings.CLUSTER_LOGS_DIR = tmp_path / "cluster-logs"
    settings.USAGE_SECONDS = 1
    return add_cluster(vision, url=fake.url, token=fake.token)
