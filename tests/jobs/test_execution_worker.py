"""A worker killed mid-run (SPEC E1; issue "no orphan processes survive a restarted worker").

The worker here is a real ``celery worker`` process on the test database, so that it can be
killed with SIGKILL. Jobs outlive it (their supervisor is not its child); the next worker
recovers them, and kills what a dead supervisor left.
"""

from __future__ import annotations

import contextlib
import os
import signal

import pytest

from jobs import operations
from jobs.models import Job, Phase
from jobs.tasks import admit, sync_runs
from resources.backends.local import host
from tests.helpers import start_worker_process, wait_until
from tests.jobs.execution_helpers import make_job, program

pytestmark = pytest.mark.usefixtures("local_runs")


@contextlib.contextmanager
def worker_process():
    """A Celery worker in its own process, killed with SIGKILL at the end."""
    process = start_worker_process("--pool", "solo")
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def phase(job) -> str:
    return Job.objects.get(pk=job.pk).phase


def sleeper(alice, vision, run_cluster):
    job = make_job(
        alice,
        vision,
        run_cluster["cpu"],
        command="python3 /workspace/algorithm/sleep.py",
        graceful_shutdown_seconds=2,
    )
    program(job, "sleep.py", "import time\nprint('working', flush=True)\ntime.sleep(600)\n")
    return job


def test_a_job_outlives_a_killed_worker_and_the_next_one_follows_it(
    settings, local_runs, alice, vision, run_cluster
):
    job = sleeper(alice, vision, run_cluster)
    with worker_process() as first:
        admit.delay()
        wait_until(lambda: phase(job) == Phase.RUNNING, 60, 0.2)
        os.killpg(first.pid, signal.SIGKILL)  # mid-run, as an OOM kill or a crash would
    workload = job.attempts.get().workload_id
    assert local_runs.leftovers(workload), "the job's processes must survive the worker"
    with worker_process():
        # The new worker's start-up recovery follows the job; a stop then ends it.
        operations.stop(Job.objects.get(pk=job.pk), alice)

        def stopped():
            sync_runs.delay()
            return phase(job) == Phase.STOPPED

        wait_until(stopped, 60, 0.5)
    assert local_runs.nothing_left(workload)


def test_processes_left_by_a_dead_supervisor_are_killed_when_a_worker_starts(
    settings, local_runs, alice, vision, run_cluster
):
    job = sleeper(alice, vision, run_cluster)
    with worker_process() as first:
        admit.delay()
        wait_until(lambda: phase(job) == Phase.RUNNING, 60, 0.2)
        os.killpg(first.pid, signal.SIGKILL)
    workload = job.attempts.get().workload_id
    supervisor = host.read_json(local_runs.workload_folder(workload) / "supervisor.json")
    os.kill(supervisor["pid"], signal.SIGKILL)  # the machine lost it: its job is orphaned
    assert local_runs.leftovers(workload)
    with worker_process():
        wait_until(lambda: phase(job) == Phase.ERROR, 60, 0.5)  # recovery ran at start-up
    assert local_runs.nothing_left(workload)
    job.refresh_from_db()
    assert "supervisor ended unexpectedly" in job.reason
