"""A worker killed between ending an attempt and settling its job (the chaos test found one
left *starting* for good): the sync settles such a job once the attempt has been over for a
while, exactly as the dead worker would have, and only once."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from console import limits
from jobs.execution import runs, settle
from jobs.faults import recovery
from jobs.models import Attempt, FaultRecord, Job, JobType, Phase, SubTask
from resources.models import Allocation
from tests.helpers import wait_until
from tests.jobs.execution_helpers import admit_and_launch, make_job, program, wait_for_phase

pytestmark = pytest.mark.usefixtures("local_runs")


@pytest.fixture
def dying_worker(monkeypatch):
    """While on, a worker ends attempts and then dies before settling their jobs."""
    monkeypatch.setattr(settle, "_settle", lambda attempt, status: False)
    return monkeypatch


def ended_unsettled(job: Job) -> Attempt:
    """Follow the job (as beat does) until its attempt has ended."""

    def ended():
        runs.sync()
        return job.attempts.filter(ended_at__isnull=True).count() == 0 and job.attempts.first()

    return wait_until(ended, 30, 0.2)


def age(job: Job, seconds: float) -> None:
    ago = timezone.now() - timedelta(seconds=seconds)
    Attempt.objects.filter(job=job).update(ended_at=ago)


def test_a_failed_attempt_a_dead_worker_left_ends_its_job_after_the_grace(
    alice, vision, run_cluster, dying_worker
):
    job = make_job(alice, vision, run_cluster["cpu"], command="sh -c 'exit 3'")
    admit_and_launch()
    attempt = ended_unsettled(job)
    dying_worker.undo()  # the next worker settles
    job.refresh_from_db()
    assert attempt.state == Attempt.State.FAILED and job.phase in settle.LIVE
    runs.sync()  # just ended: its own worker may still be settling it
    job.refresh_from_db()
    assert job.phase in settle.LIVE
    age(job, settle.SETTLE_GRACE_SECONDS + 1)
    runs.sync()
    job.refresh_from_db()
    assert job.phase == Phase.ERROR
    assert job.reason == "Failed: worker 0 exited with code 3."
    assert job.started_at is not None and job.finished_at is not None
    assert not Allocation.objects.live().filter(holder_id=job.pk).exists()
    assert settle.settle_left() == 0  # and only once
    assert job.events.filter(phase=Phase.ERROR).count() == 1


def test_a_fault_a_dead_worker_left_still_restarts_the_job(
    alice, vision, run_cluster, dying_worker, admin
):
    limits.save({"fault_exit_codes": [101]}, admin)
    job = make_job(alice, vision, run_cluster["cpu"], command="sh -c 'exit 101'",
                   fault_restart_enabled=True, max_restarts=2)  # fmt: skip
    admit_and_launch()
    ended_unsettled(job)
    dying_worker.undo()
    age(job, settle.SETTLE_GRACE_SECONDS + 1)
    assert settle.settle_left() == 1
    job.refresh_from_db()
    assert job.phase == Phase.QUEUED and job.restarts_used == 1
    assert FaultRecord.objects.get(job=job).item == "exit-code"
    assert settle.settle_left() == 0


def test_a_batch_whose_worker_died_between_sub_tasks_runs_the_next_one(
    alice, vision, run_cluster, dying_worker
):
    job = make_job(alice, vision, run_cluster["cpu"], job_type=JobType.BATCH, command="")
    for index in range(2):
        SubTask.objects.create(job=job, index=index, algorithm=job.algorithm,
                               command=f"python3 /workspace/algorithm/task.py {index}")  # fmt: skip
    program(job, "task.py", "import sys; print('sub-task', sys.argv[1])")
    admit_and_launch()
    first = ended_unsettled(job)
    dying_worker.undo()
    assert first.state == Attempt.State.SUCCEEDED and job.attempts.count() == 1
    age(job, settle.SETTLE_GRACE_SECONDS + 1)
    job = wait_for_phase(job, Phase.SUCCEEDED)
    assert list(job.attempts.order_by("number").values_list("subtask__index", "state")) == [
        (0, Attempt.State.SUCCEEDED),
        (1, Attempt.State.SUCCEEDED),
    ]


def test_a_job_another_worker_is_settling_is_left_to_it(
    transactional_db, alice, vision, run_cluster
):
    job = make_job(alice, vision, run_cluster["cpu"], phase=Phase.STARTING)
    Attempt.objects.create(job=job, number=1, backend="local", workload_id=f"job-{job.pk}-1",
                           replicas=[], state=Attempt.State.FAILED, reason="it failed",
                           ended_at=timezone.now() - timedelta(minutes=1))  # fmt: skip
    holding, release = threading.Event(), threading.Event()

    def other_worker():
        try:
            with settle._settling(job.pk, wait=True):
                holding.set()
                release.wait(10)
        finally:
            connections.close_all()

    thread = threading.Thread(target=other_worker)
    thread.start()
    try:
        assert holding.wait(10)
        assert settle.settle_left() == 0
        job.refresh_from_db()
        assert job.phase == Phase.STARTING
    finally:
        release.set()
        thread.join(10)
    assert settle.settle_left() == 1
    job.refresh_from_db()
    assert job.phase == Phase.ERROR and job.reason == "Failed: it failed."
    with connection.cursor() as cursor:  # every settle lock was given back
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s",
                       [settle.SETTLE_LOCK])  # fmt: skip
        assert cursor.fetchone()[0] == 0


def test_a_job_with_a_live_attempt_or_never_started_is_not_settled(alice, vision, run_cluster):
    queued = make_job(alice, vision, run_cluster["cpu"])
    starting = make_job(alice, vision, run_cluster["cpu"], phase=Phase.STARTING)
    long_ago = timezone.now() - timedelta(minutes=5)
    Attempt.objects.create(job=starting, number=1, backend="local", replicas=[],
                           workload_id=f"job-{starting.pk}-1", state=Attempt.State.FAILED,
                           ended_at=long_ago)  # fmt: skip
    Attempt.objects.create(job=starting, number=2, backend="local", replicas=[],
                           workload_id=f"job-{starting.pk}-2", submitted_at=long_ago)  # fmt: skip
    assert settle.settle_left() == 0
    for job in (queued, starting):
        old = job.phase
        job.refresh_from_db()
        assert job.phase == old


def test_a_job_whose_worker_died_as_it_began_running_says_running(
    alice, vision, run_cluster, monkeypatch
):
    job = make_job(alice, vision, run_cluster["cpu"], command="sleep 30",
                   graceful_shutdown_seconds=1)  # fmt: skip
    with monkeypatch.context() as dying:  # the attempt is marked running, the job is not
        dying.setattr(settle, "job_running", lambda job, attempt: None)
        admit_and_launch()
        wait_until(lambda: runs.sync() and job.attempts.get().state == Attempt.State.RUNNING,
                   30, 0.2)  # fmt: skip
    job.refresh_from_db()
    assert job.phase == Phase.STARTING
    job = wait_for_phase(job, Phase.RUNNING)
    assert job.started_at is not None and job.deadline is not None


def left_failed(alice, vision, spec, **options) -> Job:
    """A job whose attempt ended on a fault exit code a minute ago and was not settled."""
    job = make_job(alice, vision, spec, phase=Phase.STARTING, fault_restart_enabled=True,
                   **options)  # fmt: skip
    Attempt.objects.create(job=job, number=1, backend="local", workload_id=f"job-{job.pk}-1",
                           replicas=[], state=Attempt.State.FAILED, exit_code=101,
                           reason="worker 0 exited with code 101",
                           ended_at=timezone.now() - timedelta(minutes=1))  # fmt: skip
    return job


@pytest.mark.parametrize(
    ("max_restarts", "dies_in", "phase", "action"),
    [(2, (recovery, "requeue"), Phase.QUEUED, "restart"),
     (0, (settle, "close"), Phase.ERROR, "error")],
    ids=["restarted", "spent"],
)  # fmt: skip
def test_a_worker_that_dies_after_recording_a_fault_leaves_no_record_of_it(
    alice, vision, run_cluster, admin, monkeypatch, max_restarts, dies_in, phase, action
):
    """The chaos test found a job with two restarts on record and one counted: a worker
    recorded the fault, died before the job was requeued, and the next one settled it again.
    What recovery does of a fault is kept whole or not at all."""
    limits.save({"fault_exit_codes": [101]}, admin)
    job = left_failed(alice, vision, run_cluster["cpu"], max_restarts=max_restarts)

    def dies(*args, **kwargs):
        raise SystemExit("the worker was killed")

    with monkeypatch.context() as dying:
        dying.setattr(*dies_in, dies)
        with pytest.raises(SystemExit):
            settle.settle_left()
    assert settle.settle_left() == 1
    job.refresh_from_db()
    assert job.phase == phase and job.restarts_used == (1 if action == "restart" else 0)
    assert list(FaultRecord.objects.filter(job=job).values_list("action", flat=True)) == [action]
    assert settle.settle_left() == 0
