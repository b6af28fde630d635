"""SPEC F4–F6 on a cluster (issue 28): checkpoint resume through the pods' graceful
termination, counted as on the local backend; the performance watch reading the log the
console copies from the pods; an elastic job started on fewer nodes grows back. Through the
real backend against the fake API server."""

from __future__ import annotations

from decimal import Decimal

import pytest

from console import limits
from jobs.execution import runs
from jobs.faults import elastic, inspection, watch
from jobs.models import Attempt, FaultRecord, JobEvent, Phase
from resources.models import Node, NodeSpec
from resources.tasks import sync_cluster
from tests.helpers import wait_until
from tests.jobs.execution_helpers import admit_and_launch, make_job, wait_for_phase
from tests.jobs.k8s_cluster import gpu_spec
from tests.resources.k8s_fake import HAVE_CRDS

pytestmark = [
    pytest.mark.skipif(not HAVE_CRDS, reason="Volcano's CRDs are not beside the checkout"),
    pytest.mark.usefixtures("own_admissions"),  # these tests run the admission pass
]
SLOW = [f"this iteration hardware time is {900 + i} and e2e time is 1000.0 ms" for i in range(30)]


def pods_of(fake, attempt):
    return [
        p for p in fake.objects("ml", "pods")
        if p["metadata"]["labels"].get("console.io/workload") == attempt.workload_id
    ]  # fmt: skip


def back_in_queue(job):
    def queued():
        runs.sync()
        job.refresh_from_db()
        return job.phase in (Phase.QUEUED, Phase.ERROR)

    wait_until(queued, 20, 0.2)
    assert job.phase == Phase.QUEUED, job.reason
    return job


def test_a_fault_resumes_the_job_through_the_pods_graceful_termination(
    alice, vision, cluster, fake, celery_worker
):
    """F4: SIGTERM through the pod's deletion with the job's graceful time, so it saves a
    checkpoint; then back in the queue, one resume used, and on to another node."""
    job = make_job(alice, vision, gpu_spec(), pool=cluster.default_pool, resume_enabled=True,
                   max_resumes=2, graceful_shutdown_seconds=40)  # fmt: skip
    [attempt] = admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING)
    node = attempt.replicas[0]["node"]
    fake.node_condition(node, "ReadonlyFilesystem", "FilesystemIsReadOnly", "remounted ro")
    sync_cluster(cluster)
    assert inspection.inspect() == [attempt.pk]
    graces = set()

    def deleted():
        for pod in pods_of(fake, attempt):
            graces.add(pod["metadata"].get("deletionGracePeriodSeconds"))
        return graces - {None}

    wait_until(deleted, 20, 0.05)
    assert graces - {None} == {40}  # the job's graceful time, not the cluster's default
    job = back_in_queue(job)
    assert (job.resumes_used, job.restarts_used) == (1, 0)
    record = FaultRecord.objects.get(job=job)
    assert (record.action, record.used, record.allowed) == ("resume", 1, 2)
    assert JobEvent.objects.filter(job=job, message__contains="(resume 1 of 2)").exists()
    [second] = admit_and_launch()
    assert second.replicas[0]["node"] != node
    wait_for_phase(job, Phase.RUNNING)


def test_the_performance_watch_reads_the_log_copied_from_the_pod(
    alice, vision, cluster, fake, celery_worker
):
    """F6: the progress lines a pod prints reach the watch through the copied log; with
    "reschedule" the slow node is isolated and the job resumes elsewhere."""
    fake.script("job-", logs=SLOW)
    job = make_job(alice, vision, gpu_spec(), pool=cluster.default_pool, resume_enabled=True,
                   max_resumes=1, perf_threshold=Decimal("0.5"), perf_policy="reschedule",
                   graceful_shutdown_seconds=2)  # fmt: skip
    [attempt] = admit_and_launch()
    wait_for_phase(job, Phase.RUNNING)
    node = attempt.replicas[0]["node"]

    def stopped():
        watch.watch()
        return Attempt.objects.filter(pk=attempt.pk, stop_cause="fault").exists()

    wait_until(stopped, 20, 0.2)
    attempt.refresh_from_db()
    assert attempt.fault["cause"] == "performance" and attempt.fault["nodes"] == [node]
    assert attempt.watch["lines"] == 30
    assert Node.objects.get(name=node).isolated_at is not None
    job = back_in_queue(job)
    assert job.resumes_used == 1
    [event] = JobEvent.objects.filter(job=job, item="performance")
    assert "resumes elsewhere (resume 1 of 1)" in event.message


def test_an_elastic_job_starts_on_fewer_nodes_and_grows_back(
    alice, vision, admin, cluster, fake, celery_worker
):
    """F5: a gang of what fits (minAvailable) while a node is away; once it is back, the job
    is stopped with the checkpoint signal and resumes on all it asked for."""
    limits.save({"scale_up_after_seconds": 0}, admin)
    Node.objects.filter(name="gpu-02").update(cordoned=True)
    whole_node = gpu_spec("a100-4")
    NodeSpec.objects.filter(pk=whole_node.pk).update(boards=4)  # one replica per node
    whole_node.refresh_from_db()
    job = make_job(alice, vision, whole_node, pool=cluster.default_pool, mode="pytorch",
                   nodes_asked=2, elastic_min_nodes=1, elastic_scale_up=True,
                   resume_enabled=True, max_resumes=1, graceful_shutdown_seconds=2)  # fmt: skip
    [first] = admit_and_launch()
    wait_for_phase(job, Phase.RUNNING)
    [volcano] = fake.objects("ml", "jobs")
    assert (volcano["spec"]["minAvailable"], len(volcano["spec"]["tasks"])) == (1, 1)
    Node.objects.filter(name="gpu-02").update(cordoned=False)

    def grown():
        runs.sync()
        elastic.grow()
        admit_and_launch()
        return job.attempts.count() > 1

    wait_until(grown, 30, 0.3)
    first.refresh_from_db()
    assert first.stop_cause == Attempt.StopCause.SCALE
    job.refresh_from_db()
    assert job.resumes_used == 0  # growing is not a fault
    second = job.attempts.get(number=2)
    assert {r["node"] for r in second.replicas} == {"gpu-01", "gpu-02"}
    wait_for_phase(job, Phase.RUNNING)
    volcano = fake.get_job("ml", second.workload_id)
    assert (volcano["spec"]["minAvailable"], len(volcano["spec"]["tasks"])) == (1, 2)
