"""Reading the queue's standings (jobs.admission.state._queue, stored.Reading): what the last
read decoded is used again only where the stored text is the same, so a read is the read it
would be afresh."""

from dataclasses import replace
from decimal import Decimal

import pytest
from django.db import connection

from jobs.admission import db, state, stored
from jobs.admission.db import run_pass
from tests.jobs.factories import JobFactory
from tests.resources.factories import AcceleratorModelFactory, NodeFactory, NodeSpecFactory


@pytest.fixture(autouse=True)
def _nothing_from_another_test():
    db._quiet = db._previous = db._profile = None
    stored._last = {}
    yield
    db._quiet = db._previous = db._profile = None
    stored._last = {}


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
    stored._last = {}
    return state.load()


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
