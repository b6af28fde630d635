"""The cyclic collector is paused while a plan is made from the database (passes.without_gc):
reading ten thousand queued jobs into objects set it off again and again, each time walking
the whole heap of a web or worker process, and made the first prediction after a queue change
take half as long again (make bench BENCH_ARGS=prediction)."""

from __future__ import annotations

import gc

import pytest

from jobs.admission import db, prediction
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()  # this test process's objects are the collector's again


@pytest.fixture
def collector_seen(monkeypatch):
    """Whether the collector was on when each plan read the database, by module."""
    seen: list[bool] = []
    for module in (db, prediction):
        read = module.load_consistent

        def watching(*args, _read=read, **kwargs):
            seen.append(gc.isenabled())
            return _read(*args, **kwargs)

        monkeypatch.setattr(module, "load_consistent", watching)
    return seen


def test_the_forms_plan_and_the_pass_read_with_the_collector_paused(
    unfrozen, collector_seen, alice, vision, inventory
):
    JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]])
    assert gc.isenabled()
    prediction.forget_schedule()
    prediction.current_plan()
    db.run_pass()
    assert collector_seen == [False, False]
    assert gc.isenabled()  # and on again after


def test_a_long_queues_plan_is_kept_out_of_the_collectors_passes(
    unfrozen, monkeypatch, alice, vision, inventory
):
    JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]])
    prediction.forget_schedule()
    monkeypatch.setattr(prediction, "_last_long", True)  # a process that has made no plan yet
    prediction.current_plan()  # no plan before: made frozen, as for a long queue
    assert gc.get_freeze_count() > 0
    gc.unfreeze()
    JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]])  # the plan no longer holds
    prediction.current_plan()  # the last plan's queue was short: made with the collector paused
    assert gc.get_freeze_count() == 0
    prediction.forget_schedule()  # dropped: the last plan still tells its size
    prediction.current_plan()
    assert gc.get_freeze_count() == 0
    monkeypatch.setattr(prediction, "EXACT_QUEUE", 1)  # two queued jobs are now a long queue
    monkeypatch.setattr(prediction, "STALE_SECONDS", -1.0)  # no pass comes: made here
    JobFactory(owner=alice, project=vision, specs=[inventory["gpu"]])
    prediction.current_plan()
    assert gc.get_freeze_count() > 0
