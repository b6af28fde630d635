"""The performance and hang watch on jobs that really run (SPEC F6, seed 000 "性能检测"):
their programs print the progress line, the watch reads their logs, and the alerts reach
Django's outbox; "reschedule" goes through recovery for real (SIGTERM, requeue)."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest
from django.core import mail

from console import limits
from jobs.backend import attempt_backend
from jobs.faults import watch
from jobs.models import Attempt, JobEvent, Phase
from jobs.tasks import watch_faults
from resources.models import Node
from tests.helpers import wait_until
from tests.jobs.execution_helpers import admit_and_launch, make_job, program, wait_for_phase

pytestmark = pytest.mark.usefixtures("local_runs")

COMMAND = "python3 /workspace/algorithm/perf.py"
# Thirty iterations whose hardware time is 90% of the whole (above a threshold of 0.5),
# then a long pause, as a job on a slow board would.
SLOW = """
    import sys, time
    for i in range(30):
        print(f"this iteration hardware time is {900 + i * 0.5} and e2e time is 1000.0 ms.")
    sys.stdout.flush()
    time.sleep(120)
"""
# Three iterations of 10 ms, then silence; then one more line after 8 s.
STALLS = """
    import sys, time
    for i in range(3):
        print(f"step {i}: this iteration hardware time is 5 and e2e time is 10 ms", flush=True)
    time.sleep(8)
    print("this iteration hardware time is 5 and e2e time is 10 ms", flush=True)
    time.sleep(120)
"""


def running(alice, vision, spec, code: str, **fields):
    job = make_job(alice, vision, spec, command=COMMAND, graceful_shutdown_seconds=2, **fields)
    program(job, "perf.py", code)
    admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING, Phase.ERROR, Phase.SUCCEEDED)
    assert job.phase == Phase.RUNNING, job.reason
    return job, Attempt.objects.get(job=job)


def watched_until(condition, timeout: float = 20):
    """Pass after pass, as beat does, until ``condition`` holds."""
    return wait_until(lambda: (watch.watch(), condition())[1], timeout, 0.2)


def events(job, item: str) -> list[JobEvent]:
    return list(JobEvent.objects.filter(job=job, item=item).order_by("id"))


def test_no_job_asks_one_query(run_cluster, alice, vision, django_assert_num_queries):
    running(alice, vision, run_cluster["cpu"], SLOW)  # running, but asks for no watch
    with django_assert_num_queries(1):
        assert watch.watch() == []
    assert watch_faults() == []  # beat's task runs the watch (and inspection when due)


def test_performance_alert_once_by_event_and_email(run_cluster, alice, vision, settings, client):
    settings.SITE_URL = "https://console.example.com"
    job, attempt = running(
        alice, vision, run_cluster["cpu"], SLOW,
        perf_threshold=Decimal("0.5"), perf_policy="alert",
    )  # fmt: skip
    watched_until(lambda: events(job, "performance"))
    for _ in range(5):  # later passes read nothing new, and say nothing again
        watch.watch()
    [event] = events(job, "performance")
    assert event.kind == JobEvent.Kind.WARNING
    assert "above the threshold 0.500 for 20 iterations" in event.message
    assert "alert only" in event.message and "told by email" in event.message
    [sent] = mail.outbox
    assert sent.to == [alice.email]
    assert job.name in sent.subject
    assert f"https://console.example.com/jobs/{job.pk}/" in sent.body
    assert "keeps running" in sent.body
    attempt.refresh_from_db()
    assert attempt.stop_cause == "" and attempt.ended_at is None
    assert attempt.watch["lines"] == 30
    assert attempt.watch["ratios"][-1] == pytest.approx(914.5 / 1000)
    assert len(attempt.watch["ratios"]) == limits.current().performance_window
    client.force_login(alice)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Performance watch: last ratio 0.9145 (threshold 0.500)" in page


def test_performance_alert_without_an_address_is_an_event_only(run_cluster, alice, vision):
    alice.email = ""
    alice.save()
    job, _ = running(
        alice, vision, run_cluster["cpu"], SLOW,
        perf_threshold=Decimal("0.5"), perf_policy="alert",
    )  # fmt: skip
    watched_until(lambda: events(job, "performance"))
    assert "no email address" in events(job, "performance")[0].message
    assert mail.outbox == []


def test_performance_reschedule_isolates_and_resumes(run_cluster, alice, vision):
    job, attempt = running(
        alice, vision, run_cluster["gpu"], SLOW,
        resume_enabled=True, max_resumes=2, perf_threshold=Decimal("0.5"),
        perf_policy="reschedule",
    )  # fmt: skip
    node = attempt.replicas[0]["node"]
    watched_until(lambda: Attempt.objects.filter(pk=attempt.pk, stop_cause="fault").exists())
    attempt.refresh_from_db()
    assert attempt.fault["cause"] == "performance" and attempt.fault["nodes"] == [node]
    assert Node.objects.get(name=node).isolated_at is not None
    job = wait_for_phase(job, Phase.QUEUED)
    assert job.resumes_used == 1 and job.resubmitted
    [event] = events(job, "performance")
    assert "resumes elsewhere (resume 1 of 2)" in event.message
    [sent] = mail.outbox
    assert "resume 1 of 2" in sent.body
    assert f"Its nodes ({node}) are set aside" in sent.body


def test_hang_alerted_then_progress_again(run_cluster, alice, vision, admin, client):
    limits.save({"hang_min_seconds": 5, "hang_factor": 2}, admin)
    job, attempt = running(alice, vision, run_cluster["cpu"], STALLS, hang_policy="alert")
    watched_until(lambda: Attempt.objects.get(pk=attempt.pk).watch.get("lines") == 3)
    started = time.monotonic()
    watched_until(lambda: events(job, "hang"), timeout=15)
    assert time.monotonic() - started >= 4  # not before hang_min_seconds of silence
    [hung] = events(job, "hang")
    assert hung.kind == JobEvent.Kind.WARNING and "seems hung" in hung.message
    assert len(mail.outbox) == 1 and "no progress" in mail.outbox[0].subject
    client.force_login(alice)
    assert ", hung" in client.get(f"/jobs/{job.pk}/").content.decode()
    watched_until(lambda: len(events(job, "hang")) == 2, timeout=15)
    again = events(job, "hang")[1]
    assert again.kind == JobEvent.Kind.INFO and "no longer hung" in again.message
    assert len(mail.outbox) == 1
    attempt.refresh_from_db()
    assert attempt.stop_cause == "" and not attempt.watch.get("hung")


def test_hang_reschedule_restarts_without_isolating(run_cluster, alice, vision, admin):
    limits.save({"hang_min_seconds": 5, "hang_factor": 2}, admin)
    job, attempt = running(
        alice, vision, run_cluster["cpu"], STALLS,
        fault_restart_enabled=True, max_restarts=1, hang_policy="reschedule",
    )  # fmt: skip
    watched_until(
        lambda: Attempt.objects.filter(pk=attempt.pk, stop_cause="fault").exists(), timeout=20
    )
    attempt.refresh_from_db()
    assert attempt.fault["cause"] == "hang"
    job = wait_for_phase(job, Phase.QUEUED)
    assert job.restarts_used == 1
    assert not Node.objects.filter(isolated_at__isnull=False).exists()
    assert "restart 1 of 1" in mail.outbox[0].body


def test_a_log_far_behind_is_skipped_to_its_end(run_cluster, alice, vision, monkeypatch):

    # Small bounds, so that a small log is "huge": the pass reads one chunk, sees how far
    # behind it is, and goes on from the end instead of reading it all.
    monkeypatch.setattr(watch, "READ_BYTES", 4096)
    monkeypatch.setattr(watch, "BEHIND_BYTES", 64 * 1024)
    noisy = """
        import sys, time
        line = "this iteration hardware time is 950 and e2e time is 1000 ms\\n"
        sys.stdout.write(line * 6000)
        sys.stdout.flush()
        time.sleep(3)
        for i in range(30):
            print("this iteration hardware time is 900 and e2e time is 1000.0 ms.")
        sys.stdout.flush()
        time.sleep(120)
    """
    job, attempt = running(
        alice, vision, run_cluster["cpu"], noisy,
        perf_threshold=Decimal("0.5"), perf_policy="alert",
    )  # fmt: skip
    name = attempt.replicas[0]["name"]
    size = 6000 * len("this iteration hardware time is 950 and e2e time is 1000 ms\n")
    wait_until(lambda: attempt_backend(attempt).log_size(attempt.workload_id, name) >= size)
    watch.watch()
    attempt.refresh_from_db()
    assert attempt.watch["logs"][name]["at"] >= size - 1
    assert attempt.watch.get("lines", 0) == 0 and not events(job, "performance")
    watched_until(lambda: events(job, "performance"))
    attempt.refresh_from_db()
    assert attempt.watch["lines"] == 30  # the lines after the skip, none of the old ones
