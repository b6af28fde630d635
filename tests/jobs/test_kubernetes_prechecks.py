"""SPEC F1 on a cluster (seed 004): the prechecks run in each pod before the job's code, and
come back as the per-item events the local backend writes; a failed item isolates its node and
the job starts again elsewhere without its code having run. Through the real backend against
the fake API server, whose kubelet plays the precheck init container as a test scripts it."""

from __future__ import annotations

import pytest

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


def precheck_events(job):
    return list(
        JobEvent.objects.filter(job=job, item__gt="")
        .order_by("pk")
        .values_list("item", "kind", "message")
    )


def test_a_job_on_the_cluster_is_prechecked_in_its_pod(alice, vision, cluster, fake):
    pool = cluster.default_pool
    pool.precheck_root_gb, pool.precheck_shm_gb, pool.precheck_cache_gb = 30, 2, 40
    pool.save()
    job = make_job(alice, vision, gpu_spec(), pool=cluster.default_pool)
    admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING)
    [pod] = fake.objects("ml", "pods")
    node = pod["spec"]["nodeName"]
    [init] = pod["spec"]["initContainers"]
    env = {e["name"]: e["value"] for e in init["env"]}
    assert init["name"] == "precheck" and init["image"] == pod["spec"]["containers"][0]["image"]
    assert [env[f"CONSOLE_PRECHECK_{disk}_GB"] for disk in ("ROOT", "SHM", "CACHE")] == [
        "30",
        "2",
        "40",
    ]  # the pool's own thresholds
    assert env["CONSOLE_PRECHECK_BOARDS"] == "1" and env["CONSOLE_PRECHECK_ULIMIT"] == "0"
    attempt = runs.Attempt.objects.get()
    host = attempt.replicas[0]["name"]  # the plan's host name, in the job's Service
    assert (
        env["CONSOLE_PRECHECK_PEERS"]
        == f"{host}.{attempt.workload_id}"
        == pod["spec"]["hostname"] + "." + pod["spec"]["subdomain"]
    )
    # It gets the boards it counts.
    assert init["resources"]["limits"]["nvidia.com/gpu"] == "1"
    wait_until(lambda: len(precheck_events(job)) >= 5, 10, 0.2)
    assert precheck_events(job) == [
        ("dns", "info", f"Precheck dns passed: the peers' names resolve on {node}."),
        ("disk-size root", "info", "Precheck disk-size root passed: at least 512.0 GB free on "
         f"{node} (needs more than 30 GB)."),
        ("disk-size shm", "info", "Precheck disk-size shm passed: at least 512.0 GB free on "
         f"{node} (needs more than 2 GB)."),
        ("disk-size cache", "info", "Precheck disk-size cache passed: at least 512.0 GB free "
         f"on {node} (needs more than 40 GB)."),
        ("gpu-check", "info", f"Precheck gpu-check passed: every board is visible on {node}."),
    ]  # fmt: skip
    runs.sync()  # told once, however often the attempt is followed
    assert len(precheck_events(job)) == 5
    assert not JobEvent.objects.filter(job=job, message__contains="not measured").exists()


def test_a_failed_item_isolates_the_node_and_the_job_starts_elsewhere(alice, vision, cluster, fake):
    cluster.default_pool.precheck_shm_gb = 1
    cluster.default_pool.save()
    for node in ("gpu-01", "gpu-02"):
        fake.precheck(node, "disk-size shm", False, "0.5 GB")
    fake.script("job-", logs=["step 1", "done"], run_seconds=0.3)
    job = make_job(alice, vision, gpu_spec(), pool=cluster.default_pool,
                   fault_restart_enabled=True, max_restarts=1)  # fmt: skip
    [first] = admit_and_launch()
    bad = first.replicas[0]["node"]
    good = ({"gpu-01", "gpu-02"} - {bad}).pop()
    fake.precheck(good, "disk-size shm", True)  # only the first node is short of memory
    states = set()

    def requeued():
        runs.sync()
        for pod in fake.objects("ml", "pods"):
            states.update((pod["status"].get("containerStatuses") or [{}])[0].get("state", {}))
        job.refresh_from_db()
        return job.phase == Phase.QUEUED

    wait_until(requeued, 20, 0.2)
    assert job.restarts_used == 1
    assert ("disk-size shm", "error", f"Precheck disk-size shm failed on {bad}: 0.5 GB free, "
            "needs more than 1 GB.") in precheck_events(job)  # fmt: skip
    record = FaultRecord.objects.get(job=job)
    assert (record.item, record.action, record.nodes) == ("disk-size shm", "restart", [bad])
    assert record.message.startswith(f"Precheck failed on {bad} (disk-size shm): its code was")
    assert Node.objects.get(name=bad).isolated_at is not None
    # Its code never ran there: the pod's container waited for its init, never started.
    assert "running" not in states and "terminated" not in states
    [second] = admit_and_launch()
    assert second.replicas[0]["node"] == good
    job = wait_for_phase(job, Phase.SUCCEEDED)
    passed = JobEvent.objects.filter(
        job=job, item="disk-size shm", kind="info", at__gte=second.created_at
    )
    assert passed.get().message.endswith(f"on {good} (needs more than 1 GB).")


def test_without_fault_restart_a_failed_item_ends_the_job_as_error(alice, vision, cluster, fake):
    for node in ("gpu-01", "gpu-02"):
        fake.precheck(node, "gpu-check", False, "0")
    job = make_job(alice, vision, gpu_spec(), pool=cluster.default_pool)
    admit_and_launch()
    job = wait_for_phase(job, Phase.ERROR)
    assert job.reason.startswith("Precheck failed on gpu-0")
    assert "(gpu-check): its code was not started." in job.reason
    assert any(
        item == "gpu-check" and kind == "error" and "0 of 1 board visible" in message
        for item, kind, message in precheck_events(job)
    )
