"""Faults on real local jobs (SPEC F1–F4, Q2, Q6; seeds 003, 004): injected faults, the
prechecks before a start, inspection while running, isolation, requeueing at the head of the
priority class, counts, and a plain failure that is not a fault."""

from __future__ import annotations

import pytest

from console import limits
from jobs.execution import stopping
from jobs.faults import diagnosis, inspection
from jobs.models import Attempt, FaultRecord, JobEvent, Phase
from resources.backends.base import ReplicaState, ReplicaStatus
from resources.inventory import faults
from resources.models import FaultKind, Node
from tests.helpers import wait_until
from tests.jobs.execution_helpers import admit_and_launch, make_job, program, wait_for_phase
from tests.resources.factories import NodeSpecFactory

pytestmark = pytest.mark.usefixtures("local_runs")

# Runs until told to stop; prints which node it is on.
LOOP = """
    import os, signal, sys, time
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    print("running", flush=True)
    time.sleep(float(os.environ.get("SECONDS_TO_RUN", "600")))
"""


def looping_job(alice, vision, spec, **fields):
    fields.setdefault("graceful_shutdown_seconds", 1)
    job = make_job(alice, vision, spec, command="python3 /workspace/algorithm/loop.py", **fields)
    program(job, "loop.py", LOOP)
    return job


def running(job):
    """Admitted (a pass another thread holds the lock of returns without admitting: ask
    again), then followed until it runs."""

    def admitted():
        job.refresh_from_db()
        if job.phase == Phase.QUEUED:
            admit_and_launch()
            job.refresh_from_db()
        return job.phase != Phase.QUEUED

    wait_until(admitted, 20, 0.2)
    return wait_for_phase(job, Phase.RUNNING, Phase.ERROR, Phase.SUCCEEDED, timeout=30)


def node_of(job) -> str:
    attempt = job.attempts.order_by("-number").first()
    return attempt.replicas[0]["node"]


def items(job) -> dict[str, str]:
    return {e.item: e.kind for e in job.events.exclude(item="")}


def test_prechecks_run_before_the_start_and_each_is_an_event(alice, vision, run_cluster):
    job = looping_job(alice, vision, run_cluster["gpu"], fault_restart_enabled=True,
                      max_restarts=2)  # fmt: skip
    admit_and_launch()
    job = running(job)
    assert job.phase == Phase.RUNNING
    found = items(job)
    assert set(found) == {"dns", "disk-size root", "disk-size shm", "disk-size cache",
                          "gpu-check"}  # fmt: skip
    assert set(found.values()) == {JobEvent.Kind.INFO}
    disk = job.events.get(item="disk-size root").message
    assert "passed" in disk and "GB free" in disk and node_of(job) in disk


def test_a_failed_precheck_isolates_the_node_and_restarts_elsewhere(alice, vision, run_cluster):
    """Seed 004 scenario 2: the precheck fails, the job's code never starts there, the node
    is isolated and the job goes back to the head of the queue, then runs on a healthy node."""
    job = looping_job(alice, vision, run_cluster["gpu"], fault_restart_enabled=True,
                      max_restarts=2, node_names=["node-a"])  # fmt: skip
    faults.inject(Node.objects.get(name="node-a"), FaultKind.DISK, "shm")
    admit_and_launch()
    job.refresh_from_db()
    assert job.phase == Phase.QUEUED and job.resubmitted and job.restarts_used == 1
    assert not job.attempts.exists()  # nothing of its code ran
    failed = job.events.get(item="disk-size shm")
    assert failed.kind == JobEvent.Kind.ERROR and "node-a" in failed.message
    node = Node.objects.get(name="node-a")
    assert node.cordoned and node.isolated_at and "disk-size shm" in node.isolated_reason
    record = FaultRecord.objects.get(job=job)
    summary = (record.item, record.action, record.used, record.allowed)
    assert summary == ("disk-size shm", "restart", 1, 2)
    # It asked for node-a only: it waits until an admin returns the node.
    admit_and_launch()
    job.refresh_from_db()
    assert job.phase == Phase.QUEUED
    faults.return_to_service(node)
    admit_and_launch()
    job = running(job)
    assert job.phase == Phase.RUNNING and node_of(job) == "node-a"


def test_without_fault_options_a_failed_precheck_ends_the_job(alice, vision, run_cluster):
    job = looping_job(alice, vision, run_cluster["gpu"], node_names=["node-b"])
    faults.inject(Node.objects.get(name="node-b"), FaultKind.BOARD, "")
    admit_and_launch()
    job.refresh_from_db()
    assert job.phase == Phase.ERROR
    assert "Precheck failed on node-b (gpu-check)" in job.reason
    assert "neither checkpoint resume nor fault restart" in job.reason
    assert Node.objects.get(name="node-b").isolated_at is not None


def test_inspection_finds_a_lost_heartbeat_and_the_job_restarts_elsewhere(
    alice, vision, run_cluster
):
    job = looping_job(alice, vision, run_cluster["gpu"], fault_restart_enabled=True,
                      max_restarts=1)  # fmt: skip
    admit_and_launch()
    job = running(job)
    first = node_of(job)
    faults.inject(Node.objects.get(name=first), FaultKind.HEARTBEAT)
    assert inspection.inspect() == [job.attempts.get().pk]
    assert inspection.inspect() == []  # already interrupted: a second pass changes nothing
    event = job.events.get(item="heartbeat")
    assert first in event.message and "restart 1 of 1" in event.message
    job = wait_for_phase(job, Phase.QUEUED, Phase.ERROR)
    assert job.phase == Phase.QUEUED and job.resubmitted and job.restarts_used == 1
    assert Node.objects.get(name=first).isolated_at is not None
    admit_and_launch()
    job = running(job)
    assert job.phase == Phase.RUNNING and node_of(job) != first
    assert [a.stop_cause for a in job.attempts.order_by("number")] == ["fault", ""]


def test_a_killed_process_is_a_fault_and_counts_run_out(alice, vision, run_cluster):
    """Seed 003: a killed process restarts the job (no isolation: the node is fine); once
    the count is used, the next fault ends it as error, saying so."""
    job = looping_job(alice, vision, run_cluster["cpu"], fault_restart_enabled=True,
                      max_restarts=1)  # fmt: skip
    for expected in (Phase.QUEUED, Phase.ERROR):
        admit_and_launch()
        job = running(job)
        node = Node.objects.get(name=node_of(job))
        fault = faults.inject(node, FaultKind.KILL)
        assert fault.effect.startswith("sent to job-")
        job = wait_for_phase(job, expected, timeout=30)
        assert Node.objects.get(pk=node.pk).isolated_at is None
    attempt = job.attempts.order_by("-number").first()
    assert attempt.exit_code == 137
    assert "its only recovery is used" in job.reason
    assert list(job.faults.values_list("action", flat=True)) == ["restart", "error"]


def once(code: int) -> str:
    """Exits with ``code`` the first time, succeeds when run again (in the same output)."""
    return (
        f'sh -c \'if [ -e "$CONSOLE_OUTPUT_DIR/once" ]; then exit 0; '
        f'else touch "$CONSOLE_OUTPUT_DIR/once"; exit {code}; fi\''
    )


def test_a_fault_exit_code_restarts_and_a_plain_failure_does_not(alice, vision, run_cluster):
    faulty = make_job(alice, vision, run_cluster["cpu"], command=once(101),
                      fault_restart_enabled=True, max_restarts=3)  # fmt: skip
    buggy = make_job(alice, vision, run_cluster["cpu"], command=once(3),
                     fault_restart_enabled=True, max_restarts=3)  # fmt: skip
    admit_and_launch()
    faulty = wait_for_phase(faulty, Phase.QUEUED, Phase.ERROR)
    buggy = wait_for_phase(buggy, Phase.ERROR, Phase.QUEUED)
    assert faulty.phase == Phase.QUEUED and faulty.restarts_used == 1, faulty.reason
    assert FaultRecord.objects.get(job=faulty).item == "exit-code"
    assert buggy.phase == Phase.ERROR and buggy.restarts_used == 0
    assert "nodes are healthy, so this is not a fault" in buggy.reason
    assert not Node.objects.exclude(isolated_at=None).exists()
    running(faulty)
    assert wait_for_phase(faulty, Phase.SUCCEEDED, Phase.ERROR).phase == Phase.SUCCEEDED


def test_fault_exit_codes_are_the_admins(alice, vision, run_cluster, admin):
    limits.save({"fault_exit_codes": [7]}, admin)
    job = make_job(alice, vision, run_cluster["cpu"], command=once(7),
                   fault_restart_enabled=True, max_restarts=1)  # fmt: skip
    admit_and_launch()
    job = wait_for_phase(job, Phase.QUEUED, Phase.ERROR)
    assert job.phase == Phase.QUEUED
    running(job)
    assert wait_for_phase(job, Phase.SUCCEEDED, Phase.ERROR).phase == Phase.SUCCEEDED


# Worker 1 exits with a fault code; worker 0 is stopped because it did (SIGTERM: 143).
SECOND_FAILS = (
    "sh -c 'if [ \"$CONSOLE_REPLICA_INDEX\" = 1 ]; then sleep 0.3; exit 101; fi; sleep 30'"
)


def test_a_fault_code_of_a_second_worker_is_a_fault_too(alice, vision, run_cluster, admin):
    """Found by the chaos test: worker 0, stopped for worker 1's fault exit code, comes
    first and its 143 hid the fault: the job ended as a plain failure, nobody said what the
    platform did, and a fault-tolerant one was not restarted."""
    limits.save({"fault_exit_codes": [101]}, admin)
    two = {"mode": "tensorflow", "nodes_asked": 2, "command": SECOND_FAILS,
           "graceful_shutdown_seconds": 1}  # fmt: skip
    plain = make_job(alice, vision, run_cluster["cpu"], **two)
    tolerant = make_job(alice, vision, run_cluster["cpu"], fault_restart_enabled=True,
                        max_restarts=1, **two)  # fmt: skip
    admit_and_launch()
    plain = wait_for_phase(plain, Phase.ERROR, Phase.QUEUED)
    tolerant = wait_for_phase(tolerant, Phase.QUEUED, Phase.ERROR)
    assert plain.attempts.get().exit_code == 101
    assert "neither checkpoint resume nor fault restart" in plain.reason, plain.reason
    assert FaultRecord.objects.get(job=plain).action == FaultRecord.Action.ERROR
    assert tolerant.phase == Phase.QUEUED and tolerant.restarts_used == 1, tolerant.reason
    assert FaultRecord.objects.get(job=tolerant).item == "exit-code"


def test_the_telling_exit_code_is_a_failed_replicas_fault_code_first():
    # A cluster marks the pod it deleted for the fault failed too, and lists it first.
    deleted = ReplicaStatus("worker-0", ReplicaState.FAILED, 143)
    stopped = ReplicaStatus("worker-0", ReplicaState.STOPPED, 143)
    faulty = ReplicaStatus("worker-1", ReplicaState.FAILED, 101)
    assert diagnosis.telling_exit_code([deleted, faulty], {101}) == 101
    assert diagnosis.telling_exit_code([stopped, faulty], {101}) == 101
    assert diagnosis.telling_exit_code([deleted, faulty], {7}) == 143
    assert diagnosis.telling_exit_code([stopped], {101}) is None


def test_a_requeued_job_goes_ahead_of_its_priority_class(alice, vision, run_cluster):
    """Q2: resubmitted after a fault, it starts before an older job of its priority."""
    whole = NodeSpecFactory(name="gpu-2", cpu_millicores=1000, memory_mib=1024, boards=2,
                            accelerator_model=run_cluster["gpu"].accelerator_model)  # fmt: skip
    job = looping_job(alice, vision, whole, fault_restart_enabled=True, max_restarts=1,
                      node_names=["node-a"])  # fmt: skip
    admit_and_launch()
    job = running(job)
    # Both want the whole node-a too: they wait behind the running job.
    waiting = looping_job(alice, vision, whole, node_names=["node-a"])
    blocker = looping_job(alice, vision, whole, node_names=["node-a"])
    admit_and_launch()
    faults.inject(Node.objects.get(name="node-a"), FaultKind.KILL)
    job = wait_for_phase(job, Phase.QUEUED)
    admit_and_launch()
    for other in (waiting, blocker):
        other.refresh_from_db()
    job.refresh_from_db()
    assert job.phase in (Phase.STARTING, Phase.RUNNING)
    assert waiting.phase == Phase.QUEUED and blocker.phase == Phase.QUEUED
    assert waiting.queue_position == 1


def test_a_stop_during_a_fault_recovery_ends_the_job_as_stopped(alice, vision, run_cluster):
    job = looping_job(alice, vision, run_cluster["gpu"], fault_restart_enabled=True,
                      max_restarts=2, graceful_shutdown_seconds=5)  # fmt: skip
    admit_and_launch()
    job = running(job)
    faults.inject(Node.objects.get(name=node_of(job)), FaultKind.NIC)
    inspection.inspect()
    assert stopping.request_stop(job, alice)
    job = wait_for_phase(job, Phase.STOPPED, Phase.QUEUED, timeout=20)
    assert job.phase == Phase.STOPPED
    wait_until(lambda: not Attempt.objects.filter(ended_at=None).exists(), 5)
