"""Seed 003 on a Kubernetes cluster: a pod force-deleted or a node gone NotReady under a job
is a fault of the cluster (SPEC F3), not a failure of the job's code. Through the real
backend against the fake API server, which plays Volcano's PodEvicted policy."""

from __future__ import annotations

import pytest

from console import limits
from jobs.execution import runs
from jobs.models import FaultRecord, JobEvent, Phase
from resources.models import Node
from tests.helpers import wait_until
from tests.jobs.execution_helpers import admit_and_launch, make_job, wait_for_phase
from tests.jobs.k8s_cluster import gpu_spec
from tests.resources.k8s_fake import HAVE_CRDS

pytestmark = [
    pytest.mark.skipif(not HAVE_CRDS, reason="Volcano's CRDs are not beside the checkout"),
    pytest.mark.usefixtures("own_admissions"),  # these tests run the admission pass
]


def restartable(alice, vision, cluster):
    job = make_job(alice, vision, gpu_spec(), pool=cluster.default_pool,
                   fault_restart_enabled=True, max_restarts=1)  # fmt: skip
    [attempt] = admit_and_launch()
    return wait_for_phase(job, Phase.RUNNING), attempt


def requeued(job):
    def back():
        runs.sync()
        job.refresh_from_db()
        return job.restarts_used or job.phase == Phase.ERROR

    wait_until(back, 20, 0.2)
    return job


def test_a_force_deleted_pod_restarts_the_job_elsewhere(alice, vision, cluster, fake):
    job, _ = restartable(alice, vision, cluster)
    [pod] = fake.objects("ml", "pods")
    node = pod["spec"]["nodeName"]
    fake.force_delete_pod(pod["metadata"]["name"])
    job = requeued(job)
    assert (job.phase, job.restarts_used) == (Phase.QUEUED, 1), job.reason
    record = FaultRecord.objects.get(job=job)
    assert (record.item, record.action, record.nodes) == ("node-lost", "restart", [node])
    assert "deleted outside the console" in record.message
    assert Node.objects.get(name=node).isolated_at is not None
    assert not JobEvent.objects.filter(job=job, kind=JobEvent.Kind.ERROR).exists()
    [second] = admit_and_launch()  # on the other node
    assert second.number == 2 and second.replicas[0]["node"] != node


def test_a_node_gone_not_ready_is_a_fault_too(alice, vision, cluster, fake):
    job, _ = restartable(alice, vision, cluster)
    [pod] = fake.objects("ml", "pods")
    fake.node_not_ready(pod["spec"]["nodeName"])
    job = requeued(job)
    assert (job.phase, job.restarts_used) == (Phase.QUEUED, 1), job.reason
    record = FaultRecord.objects.get(job=job)
    assert record.item == "node-lost" and "NoExecute taint" in record.message


def test_a_fault_free_job_whose_pod_is_deleted_ends_as_error_saying_why(
    alice, vision, cluster, fake
):
    job = make_job(alice, vision, gpu_spec(), pool=cluster.default_pool)
    admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING)
    [pod] = fake.objects("ml", "pods")
    fake.force_delete_pod(pod["metadata"]["name"])
    job = wait_for_phase(job, Phase.ERROR)
    assert "deleted outside the console" in job.reason


def test_a_problem_the_cluster_reports_of_a_node_is_a_fault_inspection_finds(
    alice, vision, cluster, fake, celery_worker
):
    """SPEC F2 from the cluster's own signals: a node-problem-detector condition on a Ready
    node (its pods still running) is found by inspection, named with the node and the
    check, and the job restarts elsewhere; the node is isolated (and cordoned)."""
    from jobs.faults import inspection
    from resources.tasks import sync_cluster

    job, attempt = restartable(alice, vision, cluster)
    [pod] = fake.objects("ml", "pods")
    node = pod["spec"]["nodeName"]
    sync_cluster(cluster)
    assert inspection.inspect() == []  # nothing reported yet
    fake.node_condition(node, "KernelDeadlock", "DockerHung",
                        "task docker:7 blocked for more than 300 seconds.")  # fmt: skip
    sync_cluster(cluster)
    assert Node.objects.get(name=node).conditions == [
        ["KernelDeadlock", "DockerHung: task docker:7 blocked for more than 300 seconds."]
    ]
    assert inspection.inspect() == [attempt.pk]  # the worker stops it on the cluster
    job = requeued(job)
    assert (job.phase, job.restarts_used) == (Phase.QUEUED, 1), job.reason
    record = FaultRecord.objects.get(job=job)
    assert (record.item, record.action, record.nodes) == (
        "condition KernelDeadlock",
        "restart",
        [node],
    )
    assert JobEvent.objects.filter(
        job=job, item="condition KernelDeadlock",
        message__startswith=f"Inspection found the node condition KernelDeadlock on {node} "
        "(condition KernelDeadlock: DockerHung: task docker:7 blocked for more than 300 "
        "seconds). Its processes are stopped",
    ).exists()  # fmt: skip
    assert Node.objects.get(name=node).isolated_at is not None
    sync_cluster(cluster)  # the worker has done it already, or this does
    assert next(n for n in fake.nodes if n["metadata"]["name"] == node)["spec"]["unschedulable"]
    [second] = admit_and_launch()
    assert second.replicas[0]["node"] != node


def test_a_node_with_a_reported_problem_fails_the_precheck_and_the_job_starts_elsewhere(
    alice, vision, cluster, fake
):
    """SPEC F1 on a cluster: a problem it reports of a node is a precheck item of its own;
    the job's code never starts there."""
    from resources.tasks import sync_cluster

    for name in ("gpu-01", "gpu-02"):
        Node.objects.filter(name=name).update(pool=cluster.default_pool)
    fake.node_condition("gpu-01", "ReadonlyFilesystem", "FilesystemIsReadOnly",
                        "Remounting filesystem read-only")  # fmt: skip
    sync_cluster(cluster)
    job = make_job(alice, vision, gpu_spec(), pool=cluster.default_pool,
                   fault_restart_enabled=True, max_restarts=1)  # fmt: skip
    Node.objects.filter(name="gpu-02").update(cordoned=True)  # gpu-01 first
    admit_and_launch()
    job.refresh_from_db()
    event = JobEvent.objects.get(job=job, item="condition ReadonlyFilesystem")
    assert event.message == (
        "Precheck condition ReadonlyFilesystem failed on gpu-01: the cluster reports "
        "FilesystemIsReadOnly: Remounting filesystem read-only."
    )
    assert not fake.objects("ml", "jobs")  # nothing of the job's was sent to the cluster
    assert Node.objects.get(name="gpu-01").isolated_at is not None
    Node.objects.filter(name="gpu-02").update(cordoned=False)
    [attempt] = admit_and_launch()
    assert attempt.replicas[0]["node"] == "gpu-02"


@pytest.fixture
def prometheus(cluster, monkeypatch):
    """A Prometheus for the cluster, asked afresh at every look."""
    from resources.inventory import probes
    from resources.models import Cluster
    from tests.resources.k8s_fake.prometheus import FakePrometheus

    monkeypatch.setattr(probes, "SIGNALS_SECONDS", 0.0)
    with FakePrometheus() as fake_prometheus:
        Cluster.objects.filter(pk=cluster.pk).update(prometheus_url=fake_prometheus.url)
        yield fake_prometheus


def test_a_boards_hardware_xid_from_prometheus_is_a_fault_and_a_programs_is_not(
    alice, vision, cluster, fake, prometheus, celery_worker
):
    from jobs.faults import inspection

    job, attempt = restartable(alice, vision, cluster)
    node = attempt.replicas[0]["node"]
    prometheus.xids[(node, "0")] = 0
    prometheus.xids[(node, "1")] = 13  # "graphics engine exception": the program's own
    assert inspection.inspect() == []
    prometheus.down = True  # Prometheus away: not measured, never a fault
    prometheus.xids[(node, "2")] = 79
    assert inspection.inspect() == []
    prometheus.down = False
    assert inspection.inspect() == [attempt.pk]
    job = requeued(job)
    record = FaultRecord.objects.get(job=job)
    assert (record.item, record.action, record.nodes) == ("xid", "restart", [node])
    assert record.message.startswith(
        f"Inspection found a board's hardware error (XID) on {node} (xid: board 2: XID 79)."
    )
    assert Node.objects.get(name=node).isolated_at is not None


def test_a_network_interface_gone_down_in_prometheus_is_a_fault(
    alice, vision, cluster, fake, prometheus, celery_worker
):
    from jobs.faults import inspection

    job, attempt = restartable(alice, vision, cluster)
    node = attempt.replicas[0]["node"]
    other = "gpu-02" if node == "gpu-01" else "gpu-01"
    prometheus.nics_down.add((other, "ib1"))  # not this job's node
    assert inspection.inspect() == []
    prometheus.nics_down.add((node, "ib0"))
    assert inspection.inspect() == [attempt.pk]
    record = FaultRecord.objects.get(job=requeued(job))
    assert record.item == "nic"
    assert f"network interface down on {node} (nic: ib0)" in record.message


@pytest.mark.parametrize(
    ("kind", "detail", "item", "found"),
    [
        ("board", "1", "gpu-check", "boards not visible"),
        ("condition", "", "condition KernelDeadlock",
         "the node condition KernelDeadlock on {node} (condition KernelDeadlock: injected "
         "fault)"),
        ("xid", "3:79", "xid", "a board's hardware error (XID) on {node} (xid: board 3: XID 79)"),
    ],
)  # fmt: skip
def test_a_fault_injected_on_a_cluster_node_is_found_like_a_real_one(
    alice, vision, cluster, fake, celery_worker, kind, detail, item, found
):
    """Drills on a cluster (issue 28): `manage.py inject_fault` on a cluster's node is read by
    inspection as its real check would be (a failed board, a condition a node-problem-
    detector would set, a DCGM XID); kill and freeze, which need the node's processes, are
    refused in words."""
    import io

    from django.core.management import CommandError, call_command

    from jobs.faults import inspection

    job, attempt = restartable(alice, vision, cluster)
    node = attempt.replicas[0]["node"]
    with pytest.raises(CommandError, match="only be killed or frozen on local nodes"):
        call_command("inject_fault", node, "kill", stdout=io.StringIO())
    call_command("inject_fault", node, kind, "--detail", detail, stdout=io.StringIO())
    assert inspection.inspect() == [attempt.pk]
    record = FaultRecord.objects.get(job=requeued(job))
    assert (record.item, record.nodes) == (item, [node])
    assert found.format(node=node) in record.message
    assert Node.objects.get(name=node).isolated_at is not None


def test_an_injected_failed_precheck_item_keeps_the_job_off_the_cluster_node(
    alice, vision, cluster, fake
):
    """A precheck item injected on a cluster node (a full disk) fails before the submit:
    the pods measure the rest, but an injected fault decides its item here."""
    from resources.inventory import faults

    faults.inject(Node.objects.get(name="gpu-01"), "disk", "shm")
    job = make_job(alice, vision, gpu_spec(), pool=cluster.default_pool,
                   fault_restart_enabled=True, max_restarts=1)  # fmt: skip
    Node.objects.filter(name="gpu-02").update(cordoned=True)  # gpu-01 first
    admit_and_launch()
    assert list(JobEvent.objects.filter(job=job, item__startswith="disk").values_list(
        "item", "message"
    )) == [("disk-size shm", "Precheck disk-size shm failed on gpu-01: 0.0 GB free, needs "
            f"more than {limits.current().precheck_shm_gb} GB.")]  # fmt: skip
    assert not fake.objects("ml", "jobs")
    assert Node.objects.get(name="gpu-01").isolated_at is not None
