"""A long queue with no plan is planned a part a pass (jobs.scheduling.core.FRESH): the jobs
not reached yet say so, hold no promise, and the next pass, asked for at once, goes on."""

import time
from dataclasses import replace
from decimal import Decimal

import pytest

from jobs import hooks, tasks
from jobs.admission import db, plans
from jobs.admission.db import run_pass
from jobs.models import Job, Phase
from jobs.scheduling import core
from tests.helpers import other_connection, wait_until
from tests.jobs.factories import JobFactory
from tests.resources.factories import AcceleratorModelFactory, NodeFactory, NodeSpecFactory


@pytest.fixture(autouse=True)
def _no_pass_carried_between_tests():
    db._quiet = db._previous = db._profile = None
    yield
    db._quiet = db._previous = db._profile = None


@pytest.fixture
def whole_cluster_jobs(alice, vision):
    """Two 8-board nodes and five jobs that each take both, whole: one runs, the others
    wait one behind the other."""
    a100 = AcceleratorModelFactory(name="A100")
    for i in range(2):
        NodeFactory(name=f"g{i}", board_count=8, accelerator_model=a100)
    whole = NodeSpecFactory(name="a100x8", boards=Decimal(8), accelerator_model=a100,
                            cpu_millicores=1000, memory_mib=1024)  # fmt: skip
    fields = {"owner": alice, "project": vision, "nodes_asked": 2, "mode": "pytorch"}
    return [JobFactory(name=f"j{i}", specs=[whole], duration_hours=1 + i, **fields)
            for i in range(5)]  # fmt: skip


def standings(jobs):
    rows = Job.objects.in_bulk([job.pk for job in jobs])
    return [rows[job.pk] for job in jobs]


@pytest.mark.django_db(transaction=True)
def test_a_pass_plans_a_part_and_the_next_pass_the_rest(whole_cluster_jobs, monkeypatch):
    monkeypatch.setattr(core, "FRESH", 2)
    first = run_pass()
    assert first.ran and len(first.admitted) == 1 and first.unplanned == 3
    running, promised, *later = standings(whole_cluster_jobs)
    assert running.phase == Phase.ADMITTED
    assert promised.latest_start is not None and promised.standing.reservation is not None
    for job in later:
        assert job.phase == Phase.QUEUED and job.latest_start is None
        assert job.standing.reservation is None  # no promise to keep
        assert job.wait_detail == {"kind": "NotYetPlanned"}
        assert job.wait_reason.startswith("not planned yet")
    assert [job.queue_position for job in [promised, *later]] == [1, 2, 3, 4]

    second = run_pass()
    assert second.unplanned == 1
    _, again, third, fourth, fifth = standings(whole_cluster_jobs)
    assert again.latest_start == promised.latest_start  # the promise kept
    assert promised.latest_start < third.latest_start < fourth.latest_start
    assert fifth.latest_start is None

    assert run_pass().unplanned == 0
    *_, fifth = standings(whole_cluster_jobs)
    assert fifth.latest_start > fourth.latest_start and fifth.wait_detail["kind"] != "NotYetPlanned"


@pytest.mark.django_db(transaction=True)
def test_parts_are_published_now_and_then_and_the_whole_plan_at_once(
    whole_cluster_jobs, monkeypatch
):
    """A pass that planned a part publishes its plan only once the last is some seconds
    old or gone (the next pass follows at once); the pass that plans the last part always
    does."""
    monkeypatch.setattr(core, "FRESH", 1)
    monkeypatch.setattr(plans, "_published", None)
    assert run_pass().unplanned == 4  # nothing published yet: this part is
    first = plans.published_token()
    assert first is not None
    assert run_pass().unplanned == 3
    assert plans.published_token() == first  # a part, a moment after the last
    plans.forget()  # the cache lost it (Redis started again, say)
    assert run_pass().unplanned == 2
    second = plans.published_token()
    assert second not in (None, first)
    monkeypatch.setattr(plans, "PARTS_EVERY_SECONDS", 0.0)
    assert run_pass().unplanned == 1
    third = plans.published_token()
    assert third != second  # a part, once the last plan is old enough
    monkeypatch.setattr(plans, "PARTS_EVERY_SECONDS", 3600.0)
    assert run_pass().unplanned == 0
    whole = plans.load()
    assert whole.token != third and not whole.schedule.unplanned  # the whole plan


@pytest.mark.django_db(transaction=True)
def test_the_first_part_after_an_urgent_submit_is_not_published(whole_cluster_jobs, monkeypatch):
    """An urgent job voids the promises behind it, which the passes then plan again a part
    each. The first part is not published, however old the last plan (the web answers from
    it, dated, a second more); the parts are, once planning them has gone on some seconds;
    the last always is."""
    monkeypatch.setattr(core, "FRESH", 1)
    monkeypatch.setattr(plans, "_published", None)
    monkeypatch.setattr(plans, "_parts_began", None)
    while run_pass().unplanned:
        pass
    whole = plans.published_token()
    assert whole is not None and plans._parts_began is None
    # The whole plan a minute old: a part would have been published at once.
    monkeypatch.setattr(plans, "_published", replace(plans._published, at=time.monotonic() - 60))
    first = whole_cluster_jobs[0]
    fields = {"owner": first.owner, "project": first.project, "nodes_asked": 2, "mode": "pytorch"}
    JobFactory(name="urgent", specs=list(first.specs.all()), duration_hours=1, priority=2, **fields)
    assert run_pass().unplanned > 1
    assert plans.published_token() == whole  # the first part: not published
    monkeypatch.setattr(plans, "_parts_began", time.monotonic() - 60)  # parts for a minute
    assert run_pass().unplanned >= 1
    part = plans.published_token()
    assert part != whole  # a part, once planning in parts has gone on long enough
    while run_pass().unplanned:
        pass
    assert plans.published_token() not in (whole, part) and plans._parts_began is None


@pytest.mark.django_db(transaction=True)
def test_the_worker_plans_the_rest_without_waiting_for_beat(
    whole_cluster_jobs, monkeypatch, celery_worker
):
    # No beat here: only the passes each pass's task asks for plan the rest of the queue.
    monkeypatch.setattr(core, "FRESH", 1)
    monkeypatch.setattr(hooks, "admission_listeners", [])  # j0 holds its nodes, unlaunched
    tasks.admit()  # the worker's task, run here: one pass, its reclaim, then the next asked
    wait_until(
        lambda: all(job.latest_start for job in standings(whole_cluster_jobs)[1:]),
        timeout=30,
    )


@pytest.mark.django_db(transaction=True)
def test_the_next_part_is_asked_for_once_the_lock_is_free(whole_cluster_jobs, monkeypatch):
    """Asked for while the pass or its reclaim still held the admission lock, the next
    pass could run at once in another worker process, find the lock held and end as a
    no-op: the rest of the queue then waited for beat."""
    monkeypatch.setattr(core, "FRESH", 1)
    free_when_asked = []

    def asked(name: str) -> None:
        with other_connection() as other:
            free = other.execute("SELECT pg_try_advisory_lock(%s)", [db.LOCK_KEY]).fetchone()[0]
            other.execute("SELECT pg_advisory_unlock_all()")
        free_when_asked.append((name, free))

    monkeypatch.setattr(tasks, "send", asked, raising=False)
    monkeypatch.setattr(db, "send", asked)
    monkeypatch.setattr(hooks, "admission_listeners", [])  # j0 holds its nodes, unlaunched
    tasks.admit()
    assert free_when_asked == [("jobs.tasks.admit", True)]
    assert run_pass().unplanned == 3  # a pass alone asks for nothing: its task does
    assert free_when_asked == [("jobs.tasks.admit", True)]


@pytest.mark.django_db(transaction=True)
def test_the_form_and_the_queue_say_what_is_not_planned_yet(
    client, alice, job_post, whole_cluster_jobs, monkeypatch
):
    from django.utils import timezone

    from resources.models import Node

    jobs = whole_cluster_jobs
    # Only the two nodes the jobs take (job_post's inventory brings others).
    Node.objects.exclude(name__in=["g0", "g1"]).update(retired_at=timezone.now())
    monkeypatch.setattr(core, "FRESH", 2)
    run_pass()
    client.force_login(alice)
    whole = {"specs": [jobs[0].specs.get().pk], "mode": "pytorch", "node_count": "2"}
    # Behind the jobs not planned yet, a draft's start depends on where they go.
    behind = " ".join(client.post("/jobs/new/predict/", job_post(**whole)).content.decode().split())
    assert "Will queue: position 6 of 6" in behind and "Starts by" not in behind
    assert "not planned yet" in behind
    # Ahead of them (urgent), it is planned against the promises ahead of it alone.
    urgent = job_post(**whole, priority="1")
    ahead = " ".join(client.post("/jobs/new/predict/", urgent).content.decode().split())
    assert "Will queue: position 1 of 6" in ahead and "Starts by" in ahead
    page = client.get("/queue/").content.decode()
    assert page.count('data-testid="not-yet-planned"') == 3
    detail = client.get(f"/jobs/{jobs[4].pk}/").content.decode()
    assert "No start time yet." in detail and "not planned yet:" in detail
    client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    page = client.get("/queue/").content.decode()
    row = page.split(f'data-job="{jobs[4].name}"')[1].split("</tr>")[0]
    assert "not planned" not in row and "尚未" in row
