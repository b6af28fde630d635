"""Admitted jobs run for real on the local backend (SPEC E1, F7, O6; Q1 statuses): success,
failure with its exit code, a missing command, stop and expiry within the graceful time,
a moved deadline, batch sub-tasks one after the other."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import operations
from jobs.execution import runs
from jobs.models import Attempt, JobEvent, JobType, Phase, Status, SubTask
from resources.models import Allocation
from tests.helpers import wait_until
from tests.jobs.execution_helpers import (
    admit_and_launch,
    log_of,
    make_job,
    program,
    wait_for_phase,
)

pytestmark = pytest.mark.usefixtures("local_runs")


def messages(job) -> list[str]:
    events = JobEvent.objects.filter(job=job).order_by("at", "id")
    return list(events.values_list("message", flat=True))


def test_a_job_runs_in_its_workspace_and_succeeds(alice, vision, run_cluster):
    job = make_job(
        alice,
        vision,
        run_cluster["cpu"],
        command="python3 /workspace/algorithm/main.py",
    )
    program(
        job,
        "main.py",
        """
        import os
        print("hello from", os.environ["CONSOLE_JOB_NAME"], os.getcwd().endswith("workspace"))
        open("outputs/result.txt", "w").write("done")
        """,
    )
    [attempt] = admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED)
    assert job.status == Status.SUCCEEDED
    assert job.started_at is not None and job.finished_at >= job.started_at
    assert job.deadline == job.started_at + timedelta(hours=job.duration_hours)
    attempt.refresh_from_db()
    assert (attempt.state, attempt.exit_code) == (Attempt.State.SUCCEEDED, 0)
    assert f"hello from {job.name} True" in log_of(attempt)
    assert not Allocation.objects.live().filter(holder_id=job.pk).exists()
    events = messages(job)
    assert events[-3].startswith("Starting on ")
    assert events[-2].startswith("Running: ")
    assert events[-1] == "Succeeded."


def test_a_failing_command_ends_as_error_with_its_exit_code(alice, vision, run_cluster):
    job = make_job(
        alice,
        vision,
        run_cluster["cpu"],
        command="python3 -c 'import sys; sys.exit(3)'",
    )
    [attempt] = admit_and_launch()
    job = wait_for_phase(job, Phase.ERROR)
    attempt.refresh_from_db()
    assert attempt.exit_code == 3
    assert "exited with code 3" in job.reason
    last = JobEvent.objects.filter(job=job).last()
    assert last.kind == JobEvent.Kind.ERROR and "exited with code 3" in last.message
    assert not Allocation.objects.live().filter(holder_id=job.pk).exists()


def test_a_command_that_is_not_found_ends_as_error_saying_so(alice, vision, run_cluster):
    job = make_job(
        alice,
        vision,
        run_cluster["cpu"],
        command="pyhton3 train.py",
    )
    admit_and_launch()
    job = wait_for_phase(job, Phase.ERROR)
    assert "pyhton3" in job.reason and "not found" in job.reason


def test_stop_ends_a_running_job_within_its_graceful_time(alice, vision, run_cluster):
    job = make_job(
        alice, vision, run_cluster["cpu"], command="sleep 600", graceful_shutdown_seconds=3
    )
    admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING)
    operations.stop(job, alice)
    stopped_at = timezone.now()
    job = wait_for_phase(job, Phase.STOPPED, timeout=10)
    assert (job.finished_at - stopped_at).total_seconds() < 3 + 2
    assert any(m.startswith("Stop requested by alice") for m in messages(job))
    assert not Allocation.objects.live().filter(holder_id=job.pk).exists()


def test_a_program_ignoring_sigterm_is_killed_after_the_graceful_time(alice, vision, run_cluster):
    job = make_job(
        alice,
        vision,
        run_cluster["cpu"],
        command="python3 /workspace/algorithm/stubborn.py",
        graceful_shutdown_seconds=2,
    )
    program(
        job,
        "stubborn.py",
        """
        import signal, time
        signal.signal(signal.SIGTERM, lambda *a: print("ignoring SIGTERM", flush=True))
        print("ready", flush=True)
        time.sleep(600)
        """,
    )
    [attempt] = admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING)
    # Running is when its process started, not when Python set its handler up: on a busy
    # machine a SIGTERM sent at once would come first.
    wait_until(lambda: "ready" in log_of(attempt), 20)
    # The graceful time runs from the stop: a busy machine may take a while to return.
    began = timezone.now()
    operations.stop(job, alice)
    job = wait_for_phase(job, Phase.STOPPED, timeout=10)
    assert 2 <= (job.finished_at - began).total_seconds() < 2 + 3
    assert "ignoring SIGTERM" in log_of(attempt)


def test_a_job_expires_when_its_duration_runs_out(alice, vision, run_cluster):
    job = make_job(
        alice,
        vision,
        run_cluster["cpu"],
        command="sleep 600",
        graceful_shutdown_seconds=2,
    )
    admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING)
    job.__class__.objects.filter(pk=job.pk).update(deadline=timezone.now())
    job = wait_for_phase(job, Phase.EXPIRED, timeout=10)
    assert job.status == Status.EXPIRED
    assert any("duration" in m and "is over" in m for m in messages(job))


def test_adjusting_the_duration_moves_the_deadline_without_a_restart(alice, vision, run_cluster):
    job = make_job(
        alice,
        vision,
        run_cluster["cpu"],
        command="sleep 600",
        graceful_shutdown_seconds=1,
    )
    [attempt] = admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING)
    operations.adjust_duration(job, 2, alice)
    job.refresh_from_db()
    assert job.deadline == job.started_at + timedelta(hours=2)
    runs.sync()
    job.refresh_from_db()
    assert job.phase == Phase.RUNNING
    assert list(job.attempts.values_list("pk", flat=True)) == [attempt.pk]


def test_batch_sub_tasks_run_one_after_the_other_into_their_own_outputs(
    client, alice, vision, run_cluster
):
    job = make_job(
        alice, vision, run_cluster["cpu"], job_type=JobType.BATCH, command="", name="sweep"
    )
    for index in range(2):
        SubTask.objects.create(
            job=job,
            index=index,
            algorithm=job.algorithm,
            command=f"python3 /workspace/algorithm/task.py {index}",
        )
    program(
        job,
        "task.py",
        """
        import sys
        open("outputs/which.txt", "w").write(sys.argv[1])
        """,
    )
    admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED)
    attempts = list(job.attempts.order_by("number"))
    assert [a.subtask.index for a in attempts] == [0, 1]
    assert all(a.state == Attempt.State.SUCCEEDED for a in attempts)
    from resources.catalog.mounts import storage_source

    outputs = storage_source(job.output_path)
    assert (outputs / "sweep-0" / "which.txt").read_text() == "0"
    assert (outputs / "sweep-1" / "which.txt").read_text() == "1"
    client.force_login(alice)
    runs_table = client.get(job.get_absolute_url()).content.decode()
    assert "sub-task 1" in runs_table and "sub-task 2" in runs_table and "Runs" in runs_table


def test_an_attempt_being_submitted_is_left_alone_until_it_is_overdue(alice, vision, run_cluster):
    job = make_job(alice, vision, run_cluster["cpu"], phase=Phase.STARTING, status=Status.RUNNING)
    attempt = Attempt.objects.create(
        job=job, number=1, backend="local", workload_id=f"job-{job.pk}-1", replicas=[]
    )
    runs.sync()  # the launching worker has not submitted it yet: nothing to conclude
    attempt.refresh_from_db()
    assert attempt.live and attempt.state == Attempt.State.STARTING
    Attempt.objects.filter(pk=attempt.pk).update(
        created_at=timezone.now() - timedelta(seconds=runs.SUBMIT_SECONDS + 1)
    )
    runs.sync()
    job.refresh_from_db()
    assert job.phase == Phase.ERROR and "never started" in job.reason


def test_an_admitted_job_its_worker_never_launched_is_launched_by_the_next_sync(
    alice, vision, run_cluster
):
    from jobs.admission.db import run_pass

    job = make_job(alice, vision, run_cluster["cpu"], command="true")
    assert run_pass().admitted == [job.pk]  # admitted, and then the worker died: no launch
    runs.sync()
    assert not job.attempts.exists()  # a launch may still be under way: give it time
    job.__class__.objects.filter(pk=job.pk).update(
        admitted_at=timezone.now() - timedelta(seconds=runs.LAUNCH_GRACE_SECONDS + 1)
    )
    job = wait_for_phase(job, Phase.SUCCEEDED)
    assert job.attempts.count() == 1


def test_a_crash_at_start_shows_its_reason_and_traceback_on_the_page(
    client, alice, vision, run_cluster
):
    job = make_job(alice, vision, run_cluster["cpu"], command="python3 -c 'import no_such_module'")
    admit_and_launch()
    job = wait_for_phase(job, Phase.ERROR)
    client.force_login(alice)
    page = client.get(job.get_absolute_url()).content.decode()
    assert "Failed: worker 0 exited with code 1." in page  # the header and the events
    assert "ModuleNotFoundError: No module named &#x27;no_such_module&#x27;" in page  # the log
    client.cookies["django_language"] = "zh-hans"
    page = client.get(job.get_absolute_url(), headers={"Accept-Language": "zh-hans"})
    assert "运行失败：worker 0 exited with code 1。" in page.content.decode()


def test_the_workload_carries_what_a_cluster_needs(alice, bob, vision, run_cluster):
    """Identity, image, labels and gang come from the job, whichever backend runs it."""
    from jobs.admission.db import run_pass
    from jobs.execution import workloads
    from resources.inventory import identity

    job = make_job(alice, vision, run_cluster["gpu"], mode="pytorch", nodes_asked=2)
    job.elastic_min_nodes = 1
    job.save(update_fields=["elastic_min_nodes"])
    run_pass()
    workload = workloads.build(job, 3)
    assert workload.run_as.uid == identity.user_number(alice.pk) == workload.run_as.gid
    assert workload.run_as.groups == (identity.project_number(vision.pk),)
    assert workload.image == job.image.reference
    assert workload.labels == {
        "console.io/job": str(job.pk),
        "console.io/attempt": "3",
        "console.io/owner": str(alice.pk),
    }
    assert workload.min_available == 1
    assert identity.run_as_for(bob).uid != workload.run_as.uid
