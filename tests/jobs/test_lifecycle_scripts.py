"""SPEC J23: a job's lifecycle scripts run for real on the local backend, at their points:
before start (failing or timing out, the command never runs), on failure, after stop (for
any end, a user's stop included), with their output under headings in the replica's log and
one event each."""

from __future__ import annotations

import re
import time

import pytest

from console import limits
from jobs.execution import stopping
from jobs.models import Attempt, Phase
from tests.helpers import wait_until
from tests.jobs.execution_helpers import admit_and_launch, log_of, make_job, wait_for_phase

pytestmark = pytest.mark.usefixtures("local_runs")


def script_events(job) -> list[str]:
    return list(job.events.filter(item="lifecycle").values_list("message", flat=True))


def run_to_end(job, *ends, timeout: float = 60):
    admit_and_launch()
    job = wait_for_phase(job, *(ends or (Phase.SUCCEEDED, Phase.ERROR)), timeout=timeout)
    attempt = Attempt.objects.get(job=job)
    return job, log_of(attempt), attempt


def test_scripts_run_around_a_failing_command_with_headings(alice, vision, run_cluster):
    job = make_job(
        alice, vision, run_cluster["cpu"], name="scripted",
        command='bash -c "echo COMMAND RAN; exit 3"',
        lifecycle_before_start='echo "before in $PWD as $(id -u)"; echo note > before.txt',
        lifecycle_on_failure="echo failure seen",
        lifecycle_after_stop="cat before.txt; echo after done",
    )  # fmt: skip
    job, log, attempt = run_to_end(job)
    assert job.phase == Phase.ERROR, (job.reason, log)
    assert attempt.exit_code == 3
    # In order, each under its heading, in the job's working folder and as its identity.
    pattern = (
        r"── before start script ──\nbefore in /workspace as \d+\n"
        r"── end of before start script \(exit 0, [\d.]+ s\) ──\n"
        r"COMMAND RAN\n"
        r"── on failure script ──\nfailure seen\n"
        r"── end of on failure script \(exit 0, [\d.]+ s\) ──\n"
        r"── after stop script ──\nnote\nafter done\n"
        r"── end of after stop script \(exit 0, [\d.]+ s\) ──\n"
    )
    assert re.fullmatch(pattern, log), log
    events = script_events(job)
    assert [e.split(" on ")[0] for e in events] == [
        "Before start script", "On failure script", "After stop script",
    ]  # fmt: skip
    assert all(re.search(r"on node-\w+ \(worker 0\): exit 0 in [\d.]+ s\.$", e) for e in events)


def test_on_failure_does_not_run_when_the_command_succeeds(alice, vision, run_cluster):
    job = make_job(
        alice, vision, run_cluster["cpu"], name="fine", command="true",
        lifecycle_on_failure="echo SHOULD NOT RUN", lifecycle_after_stop="echo after",
    )  # fmt: skip
    job, log, _ = run_to_end(job)
    assert job.phase == Phase.SUCCEEDED, job.reason
    assert "SHOULD NOT RUN" not in log
    assert "── after stop script ──\nafter\n" in log


def test_a_failing_before_start_script_ends_the_job_and_the_command_never_runs(
    alice, vision, run_cluster
):
    job = make_job(
        alice, vision, run_cluster["cpu"], name="nosetup",
        command='bash -c "echo COMMAND RAN"',
        lifecycle_before_start="echo fetching weights; echo 'no weights found' >&2; exit 4",
        lifecycle_after_stop="echo AFTER RAN",
    )  # fmt: skip
    job, log, attempt = run_to_end(job)
    assert job.phase == Phase.ERROR
    assert "COMMAND RAN" not in log and "AFTER RAN" not in log, log
    assert "── end of before start script (exit 4," in log
    assert attempt.exit_code == 4
    node = attempt.replicas[0]["node"]
    [event] = script_events(job)
    assert event == (
        f"Before start script failed on {node} (worker 0): exit code 4; last output: no weights "
        "found. The job's command does not run."
    )
    assert job.reason == (
        f"Failed: the before start script exited with code 4 on {node} (worker 0); last "
        "output: no weights found."
    )


def test_a_before_start_script_that_runs_too_long_is_killed(admin, alice, vision, run_cluster):
    limits.save({"lifecycle_script_timeout_seconds": 1}, admin)
    job = make_job(
        alice, vision, run_cluster["cpu"], name="slow", command='bash -c "echo COMMAND RAN"',
        lifecycle_before_start="echo waiting forever; sleep 60",
    )  # fmt: skip
    job, log, _ = run_to_end(job, timeout=30)
    assert job.phase == Phase.ERROR
    assert "COMMAND RAN" not in log
    assert re.search(r"── end of before start script \(timed out after \d s\) ──", log), log
    [event] = script_events(job)
    assert "Before start script timed out on" in event
    assert "after 1.0 s and was killed; last output: waiting forever." in event
    assert "timed out after 1 s" in job.reason


def test_after_stop_runs_when_the_user_stops_the_job(alice, vision, run_cluster):
    job = make_job(
        alice, vision, run_cluster["cpu"], name="stopped", graceful_shutdown_seconds=1,
        command='bash -c "echo working; sleep 60"',
        lifecycle_on_failure="echo SHOULD NOT RUN",
        lifecycle_after_stop="echo cleaning up after the stop",
    )  # fmt: skip
    admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING, Phase.ERROR)
    attempt = Attempt.objects.get(job=job)
    wait_until(lambda: "working" in log_of(attempt))
    stopping.request_stop(job, alice)
    stopping._stop_now(attempt, job.graceful_shutdown_seconds)
    job = wait_for_phase(job, Phase.STOPPED, Phase.ERROR, timeout=30)
    log = log_of(attempt)
    assert job.phase == Phase.STOPPED, job.reason
    assert "── after stop script ──\ncleaning up after the stop\n" in log, log
    assert "SHOULD NOT RUN" not in log
    assert [e.split(" on ")[0] for e in script_events(job)] == ["After stop script"]


def test_a_stop_ends_within_the_graceful_time_plus_the_script_timeout(
    admin, alice, vision, run_cluster
):
    """A command that ignores SIGTERM is killed after its graceful time (1 s); the after-stop
    script then runs for at most the admin's timeout (2 s): the stop is over in about 3 s."""
    limits.save({"lifecycle_script_timeout_seconds": 2}, admin)
    job = make_job(
        alice, vision, run_cluster["cpu"], name="stubborn", graceful_shutdown_seconds=1,
        command="bash -c \"trap '' TERM; echo stubborn; while true; do sleep 0.1; done\"",
        lifecycle_after_stop="echo slow tidy; sleep 30",
    )  # fmt: skip
    admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING, Phase.ERROR)
    attempt = Attempt.objects.get(job=job)
    wait_until(lambda: "stubborn" in log_of(attempt))
    began = time.monotonic()
    stopping.request_stop(job, alice)
    stopping._stop_now(attempt, job.graceful_shutdown_seconds)
    job = wait_for_phase(job, Phase.STOPPED, Phase.ERROR, timeout=30)
    took = time.monotonic() - began
    assert job.phase == Phase.STOPPED, job.reason
    assert 3 <= took < 5, took
    assert "── end of after stop script (timed out after 2 s) ──" in log_of(attempt)
