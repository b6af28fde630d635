"""The form's prediction is admission's answer on the current state (SPEC J24, Q5), whichever
web process gives it: a kept plan is used only while nothing it depends on has changed."""

from __future__ import annotations

import random
import re
import socket
import time

import pytest
from django.db import connection

from console.celery import app
from jobs import hooks, operations
from jobs.admission import plans, prediction
from jobs.admission.db import run_pass
from jobs.models import Job, Phase, Priority
from resources.models import Allocation, Node
from tests.helpers import live_session, other_connection, start_web_process
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.usefixtures("transactional_db")


def test_the_plan_is_kept_while_nothing_changes(alice, vision, inventory):
    JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]])
    plan = prediction.current_plan()
    again = prediction.current_plan()
    assert again.schedule is plan.schedule  # the same plan, only checked again
    assert again.checked_at >= plan.checked_at


@pytest.mark.parametrize(
    "change",
    ["submit", "priority", "allocation", "cordon", "spec choice", "raw sql"],
)
def test_any_change_admission_plans_from_makes_the_plan_again(change, alice, vision, inventory):
    job = JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]])
    plan = prediction.current_plan()
    if change == "submit":
        JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]])
    elif change == "priority":
        Job.objects.filter(pk=job.pk).update(priority=Priority.URGENT)
    elif change == "allocation":
        Allocation.objects.create(node=Node.objects.get(name="gpu-node"), holder_id=9,
                                  label="x", cpu_millicores=1, memory_mib=1)  # fmt: skip
    elif change == "cordon":
        Node.objects.filter(name="gpu-node").update(cordoned=True)
    elif change == "spec choice":
        job.spec_choices.all().delete()
    else:
        with connection.cursor() as cursor:
            cursor.execute("UPDATE jobs_job SET nodes_asked = 2 WHERE id = %s", [job.pk])
    assert prediction.current_plan().schedule is not plan.schedule


def test_a_change_committed_after_the_plan_was_read_is_seen(alice, vision, inventory):
    """A transaction already under way when the plan is made commits afterwards: its change
    was invisible to the plan, and the next answer must not use that plan."""
    job = JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]])
    with other_connection() as other:
        other.execute("UPDATE jobs_job SET priority = %s WHERE id = %s", [Priority.URGENT, job.pk])
        plan = prediction.current_plan()  # the update is not committed yet
        assert plan.schedule.order[0].priority == Priority.NORMAL
        other.commit()
    fresh = prediction.current_plan()
    assert fresh.schedule is not plan.schedule
    assert fresh.schedule.order[0].priority == Priority.URGENT


def test_a_change_rolled_back_keeps_the_plan(alice, vision, inventory):
    job = JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]])
    plan = prediction.current_plan()
    with other_connection() as other:
        other.execute("UPDATE jobs_job SET priority = %s WHERE id = %s", [Priority.URGENT, job.pk])
        other.rollback()
    assert prediction.current_plan().schedule is plan.schedule


def _changes_logged() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM jobs_queue_change")
        return cursor.fetchone()[0]


def test_a_pass_that_changes_nothing_keeps_the_plan(alice, vision, inventory):
    """Admission runs every few seconds: a pass over an unchanged queue writes nothing, and
    the form's plan stays (migration 0014; it used to be made again after every pass)."""
    from decimal import Decimal

    from tests.resources.factories import NodeSpecFactory

    whole = NodeSpecFactory(
        name="a100x8",
        boards=Decimal(8),
        accelerator_model=Node.objects.get(name="gpu-node").accelerator_model,
    )
    big = {"nodes_asked": 3, "specs": [whole]}  # three whole nodes: more than there are
    JobFactory(owner=alice, project=vision, name="waits", **big)
    JobFactory(owner=alice, project=vision, name="waits-too", **big)
    assert run_pass().queued == 2  # the first pass writes their standing
    waiting = list(Job.objects.order_by("pk").values_list("standing__position", "standing__reason"))
    assert [position for position, _ in waiting] == [1, 2] and all(w for _, w in waiting)
    plan, logged = prediction.current_plan(), _changes_logged()
    for _ in range(2):
        assert run_pass().queued == 2
    Job.objects.filter(name="no-such-job").update(priority=Priority.URGENT)  # matches nothing
    assert _changes_logged() == logged
    assert prediction.current_plan().schedule is plan.schedule
    # A change is still a change: the next pass plans it and writes the new standing, which
    # is no change of what the queue is planned from (migration 0022: none is logged).
    Job.objects.filter(name="waits-too").update(priority=Priority.URGENT)
    assert _changes_logged() == logged + 1
    assert run_pass().queued == 2
    assert Job.objects.get(name="waits-too").queue_position == 1
    assert _changes_logged() == logged + 1
    assert prediction.current_plan().schedule is not plan.schedule


def test_the_plan_is_kept_until_a_start_or_an_end_comes(alice, vision, inventory, monkeypatch):
    """Time alone changes a plan only when a reservation starts or a running job ends: the
    plan is kept until then, however long (up to the change log's minutes), and made again
    from then on."""
    from datetime import timedelta
    from decimal import Decimal
    from types import SimpleNamespace

    from django.utils import timezone

    from tests.resources.factories import NodeSpecFactory

    whole = NodeSpecFactory(name="a100x8", boards=Decimal(8), accelerator_model=inventory["a100"])
    first = JobFactory(owner=alice, project=vision, specs=[whole], duration_hours=1,
                       pool=inventory["pool"])  # fmt: skip
    JobFactory(owner=alice, project=vision, specs=[whole], pool=inventory["pool"])
    assert run_pass().admitted == [first.pk]  # the second waits for the first's end
    start = timezone.now()
    later = {"seconds": 0.0}
    monkeypatch.setattr(plans, "MAX_AGE_SECONDS", 10 * 3600.0)  # only the end counts
    monkeypatch.setattr(timezone, "now", lambda: start + timedelta(seconds=later["seconds"]))
    clock = SimpleNamespace(time=lambda: start.timestamp() + later["seconds"], sleep=time.sleep)
    monkeypatch.setattr(plans, "time", clock)
    prediction.forget_schedule()
    plan = prediction.current_plan()  # the pass's, published
    assert plan.token == plans.published_token()
    later["seconds"] = 240.0  # four minutes on, nothing started or ended
    assert prediction.current_plan().schedule is plan.schedule
    later["seconds"] = 3600.0 + 60  # the first's end has come: the second may start
    assert prediction.current_plan().schedule is not plan.schedule


def test_a_node_heartbeat_is_no_change_of_the_queue(alice, vision, inventory):
    """The inventory sync writes every node's heartbeat every half minute: that keeps the
    plan (migration 0015); anything else a node changes is a change."""
    from django.utils import timezone

    JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]])
    plan, logged = prediction.current_plan(), _changes_logged()
    Node.objects.update(last_heartbeat=timezone.now())
    node = Node.objects.get(name="gpu-node")
    node.last_heartbeat = timezone.now()
    node.save(update_fields=["last_heartbeat"])
    assert _changes_logged() == logged
    assert prediction.current_plan().schedule is plan.schedule
    Node.objects.filter(pk=node.pk).update(last_heartbeat=timezone.now(), cordoned=True)
    assert _changes_logged() == logged + 1
    assert prediction.current_plan().schedule is not plan.schedule


# --- two web processes, a changing queue, and what admission then does -------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def two_web_processes(alice):
    processes = []
    sessions = []
    try:
        for _ in range(2):
            port = _free_port()
            processes.append(start_web_process(port))
            sessions.append(live_session(f"http://127.0.0.1:{port}", alice))
        yield sessions
    finally:
        for session in sessions:
            session.close()
        for process in processes:
            process.terminate()
            process.wait(20)


STATE = re.compile(r'data-state="(\w+)"')
POSITION = re.compile(r"position (\d+) of (\d+)")


def _shown(session, data) -> tuple[str, str]:
    answer = session.post("/jobs/new/predict/", data)
    assert answer.status_code == 200, answer.text[:500]
    state = STATE.search(answer.text)[1]
    where = POSITION.search(answer.text)
    return state, where[0] if where else ""


def test_two_web_processes_show_what_admission_then_does(
    two_web_processes, alice, vision, inventory, job_post, monkeypatch
):
    # Stopping an admitted job here frees its allocations at once: no process to stop.
    monkeypatch.setattr(operations, "stoppers", [])
    # Only this test's passes admit: none enqueued by its changes, none left from before
    # (a worker an earlier test started may still run in this process).
    monkeypatch.setattr(hooks, "queue_listeners", [])
    app.control.purge()
    rng = random.Random(14)
    first, second = two_web_processes
    gpu = inventory["gpu"]
    agreed = {"now": 0, "queue": 0}
    for step in range(16):
        # The queue changes: jobs arrive (some urgent) and running ones end.
        for _ in range(rng.randint(0, 3)):
            JobFactory(owner=alice, project=vision, specs=[gpu], nodes_asked=rng.choice([1, 1, 2]),
                       priority=rng.choice([Priority.NORMAL, Priority.URGENT]))  # fmt: skip
        for job in Job.objects.filter(phase=Phase.ADMITTED).order_by("?")[: rng.randint(0, 3)]:
            operations.stop(job, alice)
        draft = job_post(name=f"draft-{step}", specs=[gpu.pk], node_count="1")
        shown = [_shown(first, draft), _shown(second, draft)]
        assert shown[0] == shown[1], f"step {step}: the two processes disagree: {shown}"
        created = first.post("/jobs/new/", draft, allow_redirects=False)
        assert created.status_code == 302, created.text[:500]
        job = Job.objects.get(name=f"draft-{step}")
        run_pass()
        job.refresh_from_db()
        state = shown[0][0]
        started = job.phase != Phase.QUEUED
        assert started == (state == "now"), f"step {step}: shown {shown[0]}, then {job.phase}"
        assert job.prediction.starts_now == started  # what the job page will say was shown
        agreed[state] += 1
    # The walk went through both answers, so both were compared with admission.
    assert agreed["now"] >= 3 and agreed["queue"] >= 3, agreed


def test_a_long_queue_is_planned_from_the_last_pass_and_the_panel_says_so(
    client, alice, vision, inventory, job_post, monkeypatch
):
    JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]])
    run_pass()
    plans.forget()  # no plan published: this process must make it
    monkeypatch.setattr(prediction, "EXACT_QUEUE", -1)  # any queue is "long"
    assert not prediction.current_plan().exact
    client.force_login(alice)
    panel = client.post("/jobs/new/predict/", job_post()).content.decode()
    assert "planned as the last admission pass left it" in panel
    monkeypatch.setattr(prediction, "EXACT_QUEUE", 300)
    prediction.forget_schedule()
    assert prediction.current_plan().exact
    run_pass()  # the pass's own plan, published, is exact whatever the queue's length
    monkeypatch.setattr(prediction, "EXACT_QUEUE", -1)
    prediction.forget_schedule()
    assert prediction.current_plan().exact
