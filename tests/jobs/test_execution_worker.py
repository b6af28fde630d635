"""A worker killed mid-run (SPEC E1; issue "no orphan processes survive a restarted worker").

The worker here is a real ``celery worker`` process on the test database, so that it can be
killed with SIGKILL. Jobs outlive it (their supervisor is not its child); the next worker
recovers them, and kills what a dead supervisor left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings as django_settings
from django.db import connection

from jobs import operations
from jobs.models import Job, Phase
from jobs.tasks import admit, sync_runs
from resources.backends import local_runner_host as host
from tests.helpers import wait_until
from tests.jobs.execution_helpers import make_job, program

pytestmark = pytest.mark.usefixtures("local_runs")

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def worker_process(settings):
    """A Celery worker in its own process, on this test's database, broker queue and
    folders."""
    from console.celery import app

    # The server the suite uses (given, or the embedded one), with the test database's name.
    url = urlsplit(os.environ["DATABASE_URL"])
    test_url = urlunsplit(url._replace(path="/" + connection.settings_dict["NAME"]))
    env = {
        **os.environ,
        "DATABASE_URL": test_url,
        "CELERY_BROKER_URL": django_settings.CELERY_BROKER_URL,
        "RUNS_DIR": str(settings.RUNS_DIR),
        "STORAGE_ROOT": str(settings.STORAGE_ROOT),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "console", "worker", "--pool", "solo",
         "--queues", app.conf.task_default_queue, "--without-gossip", "--without-mingle",
         "--loglevel", "WARNING"],
        cwd=ROOT, env=env, start_new_session=True,
    )  # fmt: skip
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
    with worker_process(settings) as first:
        admit.delay()
        wait_until(lambda: phase(job) == Phase.RUNNING, 60, 0.2)
        os.killpg(first.pid, signal.SIGKILL)  # mid-run, as an OOM kill or a crash would
    workload = job.attempts.get().workload_id
    assert local_runs.leftovers(workload), "the job's processes must survive the worker"
    with worker_process(settings):
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
    with worker_process(settings) as first:
        admit.delay()
        wait_until(lambda: phase(job) == Phase.RUNNING, 60, 0.2)
        os.killpg(first.pid, signal.SIGKILL)
    workload = job.attempts.get().workload_id
    supervisor = host.read_json(local_runs.workload_folder(workload) / "supervisor.json")
    os.kill(supervisor["pid"], signal.SIGKILL)  # the machine lost it: its job is orphaned
    assert local_runs.leftovers(workload)
    with worker_process(settings):
        wait_until(lambda: phase(job) == Phase.ERROR, 60, 0.5)  # recovery ran at start-up
    assert local_runs.nothing_left(workload)
    job.refresh_from_db()
    assert "supervisor ended unexpectedly" in job.reason
