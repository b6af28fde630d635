"""The last pass's reservations booked again together (jobs/scheduling/rebook.py) book
what booking them one by one books, and fall back to that whenever one does not fit."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.scheduling import rebook, schedule
from tests.jobs.test_scheduling_core import boards, job, node, running, spec
from tests.jobs.test_scheduling_property import scenarios
from tests.jobs.test_scheduling_settled import _change


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.data(), st.booleans())
def test_booking_together_books_what_one_by_one_books(scenario, data, replay):
    nodes, busy, _, queue, _ = scenario
    first = schedule(nodes, busy, queue, 0.0)
    nodes, busy, queue, now = _change(data.draw, nodes, busy, queue, first)
    committed = {j.id: first.reservations[j.id] for j in queue}
    together = schedule(nodes, busy, queue, now, committed)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rebook, "book_together", lambda *args: False)
        apart = schedule(nodes, busy, queue, now, committed)
    assert together.reservations == apart.reservations
    for tl_together, tl_apart in zip(together.timelines, apart.timelines, strict=True):
        assert (tl_together.times, tl_together.cpu, tl_together.mem, tl_together.mask) == (
            tl_apart.times, tl_apart.cpu, tl_apart.mem, tl_apart.mask,
        )  # fmt: skip


def test_a_reservation_that_no_longer_fits_is_searched_again_with_those_behind_it(
    monkeypatch,
):
    # A running job now ends later than the plan had it (its end was stamped late): the
    # reservation booked after it on its node no longer fits; booked together, nothing is
    # booked, and one by one that job and those behind it are searched afresh.
    nodes = [node(1), node(2)]
    busy = [running(101, 100.0, (1, 0, 8)), running(102, 50.0, (2, 0, 8))]
    queue = [job(i, spec(1, boards(8)), duration=10.0) for i in (1, 2)]
    plan = schedule(nodes, busy, queue, 0.0)
    assert [plan.reservations[i].start for i in (1, 2)] == [50.0, 60.0]
    refused = []
    together = rebook.book_together

    def watched(*args):
        refused.append(not (booked := together(*args)))
        return booked

    monkeypatch.setattr(rebook, "book_together", watched)
    later = [busy[0], running(102, 55.0, (2, 0, 8))]
    then = schedule(nodes, later, queue, 0.0, plan.reservations)
    assert refused == [True]
    assert [then.reservations[i].start for i in (1, 2)] == [55.0, 65.0]
    # Nothing late: booked together.
    refused.clear()
    schedule(nodes, busy, queue, 0.0, plan.reservations)
    assert refused == [False]
