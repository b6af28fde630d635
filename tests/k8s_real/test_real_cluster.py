"""The Kubernetes flow against a real cluster with Volcano: ``make test-k8s``.

Skipped unless KUBECONFIG is set; docs/kubernetes.md says how to make a cluster for it and
which variables it reads. It submits a job through the console's real admission pass, waits
for it to run, checks that its prechecks ran in the pod and passed, reads its log, stops
it, deletes it, and checks that nothing is left.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jobs import operations
from jobs.backend import attempt_backend
from jobs.models import Phase
from resources.models import Cluster, NodeSpec
from resources.tasks import sync_cluster
from tests.helpers import wait_until
from tests.jobs.execution_helpers import admit_and_launch, make_job, wait_for_phase
from tests.resources.factories import ImageFactory, ResourcePoolFactory

KUBECONFIG = os.environ.get("KUBECONFIG", "")
pytestmark = pytest.mark.skipif(
    not KUBECONFIG,
    reason="set KUBECONFIG to a cluster with Volcano to run these (see docs/kubernetes.md)",
)
TIMEOUT = float(os.environ.get("K8S_TIMEOUT", "300"))


@pytest.fixture
def cluster(vision, transactional_db, settings, tmp_path):
    settings.CLUSTER_LOGS_DIR = tmp_path / "cluster-logs"
    # Thresholds a small test cluster meets: the prechecks in the pod must pass there.
    pool = ResourcePoolFactory(
        name="real-cluster", precheck_root_gb=1, precheck_shm_gb=0, precheck_cache_gb=1
    )
    pool.projects.add(vision)
    cluster = Cluster(
        name="real",
        connection=Cluster.Connection.KUBECONFIG,
        context=os.environ.get("K8S_CONTEXT", ""),
        namespace=os.environ.get("K8S_NAMESPACE", "default"),
        queue=os.environ.get("K8S_QUEUE", "default"),
        storage_host_path=os.environ.get("K8S_STORAGE_HOST_PATH", ""),
        storage_claim=os.environ.get("K8S_STORAGE_CLAIM", ""),
        default_pool=pool,
    )
    cluster.set_kubeconfig(Path(KUBECONFIG.split(os.pathsep)[0]).expanduser().read_text())
    cluster.save()
    from resources.clusters import check

    found = check(cluster)
    assert found.ok, f"the cluster is not ready for jobs: {found}"
    report = sync_cluster(cluster)
    assert report.created, "the cluster reported no node"
    return cluster


def test_a_job_runs_logs_stops_and_leaves_nothing(alice, vision, cluster, celery_worker):
    spec = NodeSpec.objects.create(name="small", cpu_millicores=200, memory_mib=256)
    image = ImageFactory(reference=os.environ.get("K8S_IMAGE", "python:3.12-slim"))
    job = make_job(
        alice, vision, spec, pool=cluster.default_pool, image=image,
        command='sh -c "echo hello from $CONSOLE_JOB_NAME; sleep 600"',
        graceful_shutdown_seconds=5,
    )  # fmt: skip
    [attempt] = admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING, timeout=TIMEOUT)
    replica = attempt.replicas[0]["name"]
    backend = attempt_backend(attempt)
    wait_until(
        lambda: f"hello from {job.name}" in backend.logs(attempt.workload_id, replica)[0], 60, 1
    )
    # Seed 004's prechecks ran in the pod before the command (SPEC F1), one event per item.
    events = dict(job.events.exclude(item="").values_list("item", "message"))
    for item in ("dns", "disk-size root", "disk-size shm", "disk-size cache"):
        assert events.get(item, "").startswith(f"Precheck {item} passed"), events
    operations.stop(job, alice)
    wait_for_phase(job, Phase.STOPPED, timeout=TIMEOUT)
    operations.delete(job, alice)

    def gone():
        backend.refresh()
        return attempt.workload_id not in backend._snapshot.jobs

    wait_until(gone, 60, 1)
