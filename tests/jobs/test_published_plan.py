"""The admission pass publishes its plan; the form's prediction answers from it instead of
planning the queue on a request (issue: a long queue's first answer after a change took
seconds). Real PostgreSQL, real Redis cache, real passes."""

from __future__ import annotations

import pickle
import random
from dataclasses import dataclass, replace

import pytest
from django.db import connection

from jobs.admission import plans, prediction
from jobs.admission.db import run_pass
from jobs.admission.state import unchanged_since
from jobs.models import Job, Phase, Priority
from jobs.scheduling import passes
from jobs.scheduling.compact import tuple_state
from jobs.scheduling.node_fit import NodeInfo
from jobs.scheduling.predict import forecast, standing
from jobs.scheduling.timeline import Item, Timeline
from tests.bench.scheduler_core import uniform
from tests.helpers import other_connection
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.fixture
def waits(inventory):
    """Job fields of a job that waits: three whole nodes, more than there are."""
    from decimal import Decimal

    from tests.resources.factories import NodeSpecFactory

    whole = NodeSpecFactory(name="a100x8", boards=Decimal(8), accelerator_model=inventory["a100"])
    return {"specs": [whole], "nodes_asked": 3}


@pytest.fixture
def no_making(monkeypatch):
    """Fail if this process plans the queue itself."""
    made = []

    def refuse():
        made.append(1)
        raise AssertionError("the plan was made on a request")

    monkeypatch.setattr(prediction, "_made", refuse)
    return made


def _snapshot_and_last() -> tuple[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_current_snapshot()::text, coalesce(max(id), 0) FROM jobs_queue_change"
        )
        return cursor.fetchone()


def test_own_writes_are_no_change_but_anyone_elses_are(alice, vision, inventory):
    job = JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]])
    snapshot, last = _snapshot_and_last()
    with other_connection() as mine:
        mine.execute("UPDATE jobs_job SET priority = %s WHERE id = %s", [Priority.URGENT, job.pk])
        own = mine.execute("SELECT pg_current_xact_id()::text").fetchone()[0]
        mine.commit()
    assert not unchanged_since(snapshot, last)
    assert unchanged_since(snapshot, last, (own,))
    Job.objects.filter(pk=job.pk).update(priority=Priority.NORMAL)  # someone else's
    assert not unchanged_since(snapshot, last, (own,))


def test_a_pass_publishes_a_plan_that_holds_after_its_own_admissions(
    alice, vision, inventory, waits, no_making
):
    starts = JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]], name="starts")
    JobFactory(owner=alice, project=vision, name="waits", **waits)
    assert run_pass().admitted == [starts.pk]
    token = plans.published_token()
    assert token
    plan = prediction.current_plan()  # a process that never planned: the published one
    assert plan.token == token and plan.exact
    assert plan.seen.own  # the pass's own transactions, which the plan already holds
    assert plan.seen.holds(plan.seen.now)
    assert plan.schedule.reservation(starts.pk).start == plan.schedule.now
    again = prediction.current_plan()
    assert again.schedule is plan.schedule  # kept, only checked
    assert no_making == []


def test_a_pass_that_changes_nothing_publishes_nothing_new(alice, vision, waits):
    JobFactory(owner=alice, project=vision, name="waits", **waits)
    run_pass()
    token = plans.published_token()
    from jobs.admission import db

    db._quiet = None  # not skipped: planned in full, and found unchanged
    run_pass()
    assert plans.published_token() == token


def test_a_change_after_the_pass_is_not_answered_from_it_on_a_short_queue(
    alice, vision, inventory, waits
):
    JobFactory(owner=alice, project=vision, name="waits", **waits)
    run_pass()
    JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]], name="after")
    plan = prediction.current_plan()
    assert plan.token == ""  # made here, on the current state
    assert {job.id for job in plan.schedule.order} == set(
        Job.objects.filter(phase=Phase.QUEUED).values_list("pk", flat=True)
    )


def test_a_long_queue_answers_from_the_last_plan_until_the_next_pass(
    alice, vision, inventory, waits, monkeypatch, no_making
):
    monkeypatch.setattr(prediction, "EXACT_QUEUE", 0)  # any queue is "long"
    JobFactory(owner=alice, project=vision, name="waits", **waits)
    run_pass()
    first = prediction.current_plan()
    JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]], name="after")
    stale = prediction.current_plan()
    assert stale.schedule is first.schedule  # no pass yet: the last plan, dated
    assert stale.checked_at == first.checked_at
    run_pass()  # the pass the submit asked for
    monkeypatch.setattr(prediction, "LOOK_SECONDS", 0.0)
    # The answer does not wait for the published plan: a thread takes it meanwhile.
    assert prediction.current_plan().schedule is first.schedule
    prediction.settle()
    fresh = prediction.current_plan()
    assert fresh.token == plans.published_token() != first.token
    assert fresh.seen.holds(fresh.seen.now)
    assert len(fresh.schedule.order) == 2
    assert no_making == []


def test_with_no_pass_for_a_while_a_long_queue_is_planned_here(
    alice, vision, inventory, waits, monkeypatch
):
    monkeypatch.setattr(prediction, "EXACT_QUEUE", 0)
    JobFactory(owner=alice, project=vision, name="waits", **waits)
    run_pass()
    first = prediction.current_plan()
    JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]], name="after")
    monkeypatch.setattr(prediction, "STALE_SECONDS", -1.0)  # the worker is gone
    made = prediction.current_plan()
    assert made.schedule is not first.schedule and not made.exact  # replayed here
    assert len(made.schedule.order) == 2


def test_a_plan_of_another_database_is_never_taken(alice, vision, inventory, waits, settings):
    JobFactory(owner=alice, project=vision, name="waits", **waits)
    run_pass()
    assert plans.published_token()
    name = settings.DATABASES["default"]["NAME"]
    settings.DATABASES["default"]["NAME"] = name + "-elsewhere"
    try:
        assert plans.published_token() is None
    finally:
        settings.DATABASES["default"]["NAME"] = name


def test_a_stored_plan_answers_every_draft_as_the_one_made():
    """What travels (pickled, its searches' caches dropped) forecasts like the original."""
    now = 1_000_000.0
    rng = random.Random(3)
    nodes, queued = uniform(60, 400, rng, now)
    made = passes.schedule(nodes, [], queued, now)
    drafts = [
        replace(uniform(60, 1, rng, now)[1][0], id=0, submitted_at=now, priority=p)
        for p in (0, 0, 1, 2, 0, 1)
    ]
    before = [forecast(made, draft) for draft in drafts]
    stored = pickle.loads(pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL))
    assert stored.reservations is None and stored.profile.groups == {}  # left behind
    assert [forecast(stored, draft) for draft in drafts] == before
    # A job's standing, worked out from its booking, is the one the pass gave it.
    for job in queued[::7]:
        assert standing(stored, job.id) == standing(made, job.id)
        assert stored.reservation(job.id) == made.reservations[job.id]
    assert stored.reservation(10**9) is None
    # Stored compactly (jobs.scheduling.compact, Booking, Timeline): the same values back.
    assert stored.order == made.order and stored.quota.plannable == made.quota.plannable
    for kept, original in zip(stored.profile.timelines, made.profile.timelines, strict=True):
        assert kept.items == original.items
        assert all(type(item) is Item for item in kept.items.values())
        segments = (kept.times, kept.cpu, kept.mem, kept.mask)
        assert segments == (original.times, original.cpu, original.mem, original.mask)
        assert all(type(column) is list for column in segments)  # split in place by add
        assert kept.bounds == original.bounds
        assert {t: sorted(o) for t, o in kept.ends.items()} == {
            t: sorted(o) for t, o in original.ends.items() if o
        }
    for job_id, booking in stored.bookings.items():
        assert booking.placements is None and booking.where is None  # worked out again
        assert (booking.start, booking.replicas) == (
            made.bookings[job_id].start,
            made.bookings[job_id].replicas,
        )


def test_a_timeline_of_other_keys_or_wide_masks_is_stored_as_it_is():
    """Items keyed otherwise than (job, replica) or holding more than 64 slots travel too."""
    node = uniform(1, 1, random.Random(1), 0.0)[0][0]
    info = NodeInfo(0, node.state, None, None)
    for key, mask in ((("draft", 0), 0b101), ((7, 0), 1 << 70), ((7, 1), 3)):
        timeline = Timeline(info, 0.0)
        timeline.add(key, Item(10.0, 20.0, 1000, 512, mask, 7))
        timeline.add((8, 0), Item(15.0, 30.0, 500, 256, 0, 8))
        stored = pickle.loads(pickle.dumps(timeline))
        assert stored.items == timeline.items and stored.mask == timeline.mask
        assert (stored.times, stored.bounds, stored.ends) == (
            timeline.times,
            timeline.bounds,
            timeline.ends,
        )
        stored.remove(key)  # works on as the original would
        timeline.remove(key)
        assert (stored.times, stored.cpu, stored.mask) == (
            timeline.times,
            timeline.cpu,
            timeline.mask,
        )


@tuple_state
@dataclass(frozen=True, slots=True)
class _One:
    value: int


@tuple_state
@dataclass(frozen=True, slots=True)
class _Two:
    name: str
    count: int = 0


def test_frozen_dataclasses_are_stored_as_a_tuple_of_their_fields():
    for value in (_One(3), _Two("a", 2), _Two("b")):
        assert value.__getstate__() == tuple(getattr(value, f) for f in value.__slots__)
        assert pickle.loads(pickle.dumps(value)) == value
