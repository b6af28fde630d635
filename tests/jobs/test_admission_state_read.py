"""Reading the queue (jobs.admission.queue_read, stored.Reading): a job whose rows have the
versions the last read saw is used again as that read made it, a stored text decoded again
only where it changed, so a read is the read it would be afresh, whatever changed between."""

from dataclasses import replace
from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone

from jobs import lifecycle
from jobs.admission import db, queue_read, state, stored
from jobs.admission.db import run_pass
from jobs.models import Job, Phase, Priority, Standing
from resources.models import NodeSpec
from tests.jobs.factories import JobFactory
from tests.resources.factories import (
    AcceleratorModelFactory,
    NodeFactory,
    NodeSpecFactory,
    ResourcePoolFactory,
)


@pytest.fixture(autouse=True)
def _nothing_from_another_test():
    db._quiet = db._previous = db._profile = None
    stored._last = {}
    queue_read.forget()
    yield
    db._quiet = db._previous = db._profile = None
    stored._last = {}
    queue_read.forget()


@pytest.fixture
def waiting(alice, vision):
    """Five jobs planned behind one that fills the only node: each with a reservation."""
    a100 = AcceleratorModelFactory(name="A100")
    NodeFactory(name="g0", board_count=8, accelerator_model=a100)
    spec = NodeSpecFactory(name="a100x8", boards=Decimal(8), accelerator_model=a100,
                           cpu_millicores=1000, memory_mib=1024)  # fmt: skip
    jobs = [JobFactory(owner=alice, project=vision, name=f"j{i}", mode="pytorch", specs=[spec])
            for i in range(6)]  # fmt: skip
    for _ in range(3):
        run_pass()
    return jobs[1:]


def _afresh() -> state.State:
    """A read of every row, leaving what the reads before it kept as it was."""
    kept = stored._last, queue_read._last
    stored._last = {}
    queue_read.forget()
    try:
        return state.load()
    finally:
        stored._last, queue_read._last = kept


def _shift(job, seconds: float) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE jobs_standing SET reservation = jsonb_set(reservation, '{start}',"
            " to_jsonb((reservation->>'start')::float + %s)) WHERE job_id = %s",
            [seconds, job.pk],
        )


@pytest.mark.django_db(transaction=True)
def test_a_second_read_reuses_what_it_decoded_and_equals_a_fresh_read(waiting):
    first = state.load()
    assert set(first.committed) == {job.pk for job in waiting}
    second = state.load()
    for job in waiting:
        assert second.committed[job.pk] is first.committed[job.pk]  # decoded once
        assert second.recorded[job.pk][5] is first.recorded[job.pk][5]
    fresh = _afresh()
    assert fresh.committed == second.committed
    assert fresh.recorded == second.recorded
    assert all(fresh.committed[job.pk] is not second.committed[job.pk] for job in waiting)


@pytest.mark.django_db(transaction=True)
def test_a_reservation_changed_in_the_database_is_read_anew(waiting):
    before = state.load()
    moved, kept = waiting[2], waiting[3]
    _shift(moved, 60.0)
    after = state.load()
    was = before.committed[moved.pk]
    assert after.committed[moved.pk] == replace(was, start=was.start + 60.0)
    assert after.recorded[moved.pk][5]["start"] == was.start + 60.0
    assert after.committed[kept.pk] is before.committed[kept.pk]
    assert after.committed == _afresh().committed


@pytest.mark.django_db(transaction=True)
def test_a_reservation_cleared_in_the_database_is_no_longer_held(waiting):
    state.load()
    cleared = waiting[0]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE jobs_standing SET reservation = NULL WHERE job_id = %s", [cleared.pk]
        )
    after = state.load()
    assert cleared.pk not in after.committed
    assert after.recorded[cleared.pk][5] is None
    assert after.recorded == _afresh().recorded


def _same_as_afresh(read: state.State) -> None:
    fresh = _afresh()
    assert sorted(read.queue, key=lambda job: job.id) == sorted(fresh.queue, key=lambda j: j.id)
    assert read.committed == fresh.committed
    assert read.recorded == fresh.recorded
    assert (read.names, read.holders, read.rejoining) == (
        fresh.names, fresh.holders, fresh.rejoining
    )  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_a_job_changed_is_made_again_and_the_others_are_kept(waiting):
    first = state.load()
    changed, kept = waiting[1], waiting[2]
    Job.objects.filter(pk=changed.pk).update(priority=Priority.URGENT)
    after = state.load()
    made = {job.id: job for job in after.queue}
    assert made[changed.pk].priority == Priority.URGENT
    assert made[kept.pk] is {job.id: job for job in first.queue}[kept.pk]
    _same_as_afresh(after)


@pytest.mark.django_db(transaction=True)
def test_every_job_is_made_again_when_a_spec_or_a_pool_changes(waiting, vision):
    first = {job.id: job for job in state.load().queue}
    NodeSpec.objects.update(cpu_millicores=2000)
    after = {job.id: job for job in state.load().queue}
    assert all(after[pk] is not first[pk] for pk in after)
    assert {job.alternatives[0].demand.cpu for job in after.values()} == {2000}
    _same_as_afresh(state.load())
    ResourcePoolFactory(name="reserved").projects.add(vision)
    pooled = state.load()
    assert all(job.allowed_pools for job in pooled.queue)
    _same_as_afresh(pooled)


@pytest.mark.django_db(transaction=True)
def test_a_read_after_any_change_equals_a_read_of_every_row(waiting, alice, vision, speech):
    """Changes of every kind, one after another, each followed by a read that uses the last
    read and is compared with a read of every row."""
    spec = NodeSpec.objects.get()
    steps = [
        lambda: JobFactory(owner=alice, project=speech, name="joins", specs=[spec]),
        lambda: Job.objects.filter(name="j3").update(priority=Priority.URGENT),
        lambda: lifecycle.move(Job.objects.get(name="j4"), Phase.STOPPED, "Stopped."),
        run_pass,
        lambda: Standing.objects.filter(job__name="j2").update(detail={"kind": "HeldForQuota"}),
        lambda: Job.objects.filter(name="joins").update(quota_since=timezone.now()),
        lambda: NodeSpec.objects.update(memory_mib=2048),
        run_pass,
        lambda: Job.objects.filter(name="j5").delete(),
    ]
    state.load()
    for step in steps:
        step()
        _same_as_afresh(state.load())


@pytest.mark.django_db(transaction=True)
def test_the_fair_share_standing_is_set_on_jobs_read_before(waiting, monkeypatch):
    first = state.load()
    project = first.queue[0].project
    assert len({job.fair for job in first.queue}) == 1 and first.queue[0].fair != 0.25
    monkeypatch.setattr(state, "standings", lambda now: {project: 0.25})
    after = state.load()
    assert {job.fair for job in after.queue} == {0.25}
    assert after.queue[0] == replace(first.queue[0], fair=0.25)
