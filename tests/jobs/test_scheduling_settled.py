"""A pass given the last one's digest searches only the reservations that could move
(jobs/scheduling/settled.py), and plans exactly what it would have planned searching all.

The simulation in test_scheduling_property.py checks the same along whole runs of passes;
here each kind of change between two passes is drawn on its own, and the searches a pass
makes are counted.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.scheduling import Placement, RunningJob, schedule
from resources.placement.capacity import Demand
from tests.jobs.test_scheduling_core import GiB, boards, job, node, running, spec
from tests.jobs.test_scheduling_property import assert_feasible, scenarios


def test_a_pass_where_nothing_changed_searches_nothing(searches):
    nodes = [node(i) for i in range(1, 5)]
    busy = [running(100 + i, 50.0 * i, (i, 0, 8)) for i in range(1, 5)]
    queue = [job(i, spec(1, boards(8), nodes=1 + i % 2), duration=40.0 + i) for i in range(1, 9)]
    first = schedule(nodes, busy, queue, 0.0)
    assert all(r.start > 0 for r in first.reservations.values())
    assert set(first.digest.settled) == {j.id for j in queue}
    searches.clear()
    then = schedule(nodes, busy, queue, 0.0, first.reservations, previous=first.digest)
    assert searches == []
    assert then.reservations == first.reservations
    # Without the digest every kept reservation is searched again, and stays.
    again = schedule(nodes, busy, queue, 0.0, first.reservations)
    assert sorted(searches) == [j.id for j in queue]
    assert again.reservations == first.reservations


def test_a_moved_fair_share_standing_alone_searches_nothing(searches):
    # Two teams' standings move with every pass while their jobs run (SPEC G3): they order
    # the queue, but a kept job's search reads only the profile and its own specs and rules.
    nodes = [node(i) for i in range(1, 5)]
    busy = [running(100 + i, 50.0 * i, (i, 0, 8)) for i in range(1, 5)]
    queue = [
        job(i, spec(1, boards(8), nodes=1 + i % 2), duration=40.0 + i, project=1 + i % 2,
            fair=0.25 * (i % 2))
        for i in range(1, 9)
    ]  # fmt: skip
    first = schedule(nodes, busy, queue, 0.0)
    assert set(first.digest.settled) == {j.id for j in queue}
    searches.clear()
    moved = [replace(j, fair=0.5 - j.fair) for j in queue]  # the two teams swap places
    then = schedule(nodes, busy, moved, 0.0, first.reservations, previous=first.digest)
    assert searches == []
    assert set(then.digest.settled) == {j.id for j in queue}
    # As a pass searching every job plans it.
    again = schedule(nodes, busy, moved, 0.0, first.reservations)
    assert sorted(searches) == [j.id for j in queue]
    assert then.reservations == again.reservations


def test_room_given_back_after_a_start_but_within_its_run_is_searched_again(searches):
    # K (20 s) is reserved on n1 at 10, when R1 ends; n2 is free but for B's short booking
    # at 12, after K's start: B held K off n2 all the same, since K runs past 12.
    nodes = [node(1), node(2), node(3)]
    busy = [running(101, 10.0, (1, 0, 8)), running(103, 12.0, (3, 0, 8))]
    b = job(1, spec(1, boards(8), nodes=2), duration=2.0, node_names=frozenset({"n2", "n3"}))
    k = job(2, spec(1, boards(8)), duration=20.0)
    first = schedule(nodes, busy, [b, k], 0.0)
    assert first.reservations[b.id].start == 12.0
    assert first.reservations[k.id].start == 10.0
    searches.clear()
    # B leaves the queue: K can start on n2 now.
    then = schedule(nodes, busy, [k], 0.0, {k.id: first.reservations[k.id]},
                    previous=first.digest)  # fmt: skip
    assert searches == [k.id]
    assert then.reservations[k.id].start == 0.0
    assert [a.job_id for a in then.admissions] == [k.id]


def test_a_job_booked_again_as_it_was_counts_room_given_back_after_it():
    # Pass 1: A (30 s, n1 only) is searched first and stays at 33, held off n1 by B's old
    # booking at 3 (B is behind A in the queue, C ahead of both at 32); then B moves to 1,
    # giving back its room at 3: A could now start at 2, so it is not settled, and the
    # next pass moves it as a pass searching every job does.
    nodes = [node(1, boards=3, memory=16 * GiB), node(3, boards=3, memory=16 * GiB)]
    held = running(102, 32.0)
    held = replace(held, holdings=(Placement(1, 500, GiB, ()),))
    busy = [running(101, 3.0, (1, 0, 3)), held]
    c = job(6, spec(60, Demand(500, 16 * GiB), nodes=2), duration=1.0, priority=1)
    a = job(2, spec(20, boards(1, cpu=500, memory=GiB)), duration=30.0,
            node_names=frozenset({"n1"}))  # fmt: skip
    b = job(8, spec(80, boards(3, cpu=500, memory=GiB), nodes=2), duration=1.0)
    first = schedule(nodes, busy, [c, a, b], 0.0)
    assert [first.reservations[j].start for j in (6, 2, 8)] == [32.0, 33.0, 3.0]
    # 101 ended at 1: B moves to 1, after A was searched.
    second = schedule(nodes, [held], [c, a, b], 1.0, first.reservations, previous=first.digest)
    assert [second.reservations[j].start for j in (6, 2, 8)] == [32.0, 33.0, 1.0]
    assert a.id not in second.digest.settled
    b_runs = RunningJob(b.id, 2.0, second.reservations[b.id].placements)
    third = schedule(nodes, [held, b_runs], [c, a], 1.5, second.reservations,
                     previous=second.digest)  # fmt: skip
    assert third.reservations[a.id].start == 2.0
    assert (
        third.reservations
        == schedule(nodes, [held, b_runs], [c, a], 1.5, second.reservations).reservations
    )


def test_room_taken_after_a_search_and_given_back_spares_it(searches):
    # X (both nodes, urgent) starts at 10, when R1 ends; Y, behind it, was booked on n2 at
    # 2 (R2's end) after X's search, in room X cannot use. An urgent U comes after X and
    # before Y: Y's promise is void and its room given back, within X's reach on a node X
    # holds, but X's search saw that room free: giving it back changes nothing for X.
    nodes = [node(1), node(2)]
    busy = [running(101, 10.0, (1, 0, 8)), running(102, 2.0, (2, 0, 8))]
    x = job(1, spec(1, boards(8), nodes=2), duration=20.0, priority=1)
    y = job(2, spec(2, boards(4)), duration=5.0)
    first = schedule(nodes, busy, [x, y], 0.0)
    assert [first.reservations[j.id].start for j in (x, y)] == [10.0, 2.0]
    u = job(3, spec(3, boards(1, model=99)), duration=1.0, priority=1)  # never starts
    searches.clear()
    then = schedule(nodes, busy, [x, y, u], 0.0, first.reservations, previous=first.digest)
    assert x.id not in searches and y.id in searches
    assert x.id in then.digest.settled
    searches.clear()
    searched = schedule(nodes, busy, [x, y, u], 0.0, first.reservations)
    assert then.reservations == searched.reservations
    assert x.id in searches  # a pass without the digest searches it, and keeps it


def test_room_taken_after_a_search_still_counts_beside_room_taken_before_it():
    # X (3 s) waits for 11 on n1; Y, behind it, took n2 at 11 after X's search. R2 ends at
    # 9: its room on n2 (taken before X's search) makes no 3 s run beside Y's, so X stays;
    # then Y moves to 9, giving back room taken after X's search that now joins R2's: X
    # can start at 10, and a pass that searches every job moves it there.
    nodes = [node(1), node(2)]
    r1, r2 = running(101, 11.0, (1, 0, 8)), running(102, 11.0, (2, 0, 8))
    x = job(1, spec(1, boards(8)), duration=3.0)
    y = job(2, spec(1, boards(8)), duration=1.0)
    first = schedule(nodes, [r1, r2], [x, y], 0.0)
    assert [first.reservations[j.id].start for j in (x, y)] == [11.0, 11.0]
    second = schedule(nodes, [r1], [x, y], 9.0, first.reservations, previous=first.digest)
    assert [second.reservations[j.id].start for j in (x, y)] == [11.0, 9.0]
    assert x.id not in second.digest.settled
    y_runs = RunningJob(y.id, 10.0, second.reservations[y.id].placements)
    third = schedule(nodes, [r1, y_runs], [x], 9.0, second.reservations, previous=second.digest)
    assert third.reservations[x.id].start == 10.0
    assert third.reservations == schedule(nodes, [r1, y_runs], [x], 9.0,
                                          second.reservations).reservations  # fmt: skip


def test_room_out_of_reach_spares_the_search(searches):
    # A job ending early on a node the waiting job may not use changes nothing for it.
    nodes = [node(1), node(2, model=2)]
    busy = [running(101, 30.0, (1, 0, 8))]
    other = running(102, 90.0, (2, 0, 8))
    k = job(1, spec(1, boards(8)), duration=10.0)
    first = schedule(nodes, [*busy, other], [k], 0.0)
    assert first.reservations[k.id].start == 30.0
    searches.clear()
    then = schedule(nodes, busy, [k], 5.0, first.reservations, previous=first.digest)
    assert searches == []
    assert then.reservations[k.id].start == 30.0


def test_a_changed_node_or_job_is_searched_again(searches):
    nodes = [node(1), node(2)]
    busy = [running(101, 30.0, (1, 0, 8)), running(102, 40.0, (2, 0, 8))]
    k = job(1, spec(1, boards(8)), duration=10.0)
    first = schedule(nodes, busy, [k], 0.0)
    searches.clear()
    # A node added: all of its time is room given back.
    then = schedule([*nodes, node(3)], busy, [k], 0.0, first.reservations, previous=first.digest)
    assert searches == [k.id] and then.reservations[k.id].start == 0.0
    searches.clear()
    # A node left its pool: shared jobs may use it now.
    pooled = [node(1), node(2, pool=1)]
    first = schedule(pooled, busy[:1], [k], 0.0)
    assert first.reservations[k.id].start == 30.0
    searches.clear()
    then = schedule(nodes, busy[:1], [k], 0.0, first.reservations, previous=first.digest)
    assert searches == [k.id] and then.reservations[k.id].start == 0.0
    searches.clear()
    # The job's own duration changed: its last search said nothing about it as it is now.
    longer = replace(k, duration=11.0)
    schedule(nodes, busy, [longer], 0.0, first.reservations, previous=first.digest)
    assert searches == [k.id]


def test_a_pass_out_of_compressions_leaves_the_rest_to_the_next(searches):
    # Eight 1-node jobs wait behind two running ones; one of those ends 50 s early: a
    # cascade of earlier starts. One search a pass: each pass goes on where the last one
    # stopped, no start ever moves later, and the plan settles where a pass searching
    # every job would move none.
    nodes = [node(1), node(2)]
    busy = [running(101, 100.0, (1, 0, 8)), running(102, 100.0, (2, 0, 8))]
    queue = [job(i, spec(1, boards(8)), duration=10.0) for i in range(1, 9)]
    plan = schedule(nodes, busy, queue, 0.0)
    busy = [busy[0], running(102, 50.0, (2, 0, 8))]
    for passes in range(1, 20):  # noqa: B007 (counted)
        searches.clear()
        then = schedule(nodes, busy, queue, 0.0, plan.reservations, previous=plan.digest,
                        compressions=1)  # fmt: skip
        assert len(searches) <= 1
        for job_id, reservation in then.reservations.items():
            assert reservation.start <= plan.reservations[job_id].start
        plan = then
        if not searches:
            break
    assert not then.compressions_ran_out and passes == 9
    assert then.reservations[1].start == 50.0
    assert schedule(nodes, busy, queue, 0.0, then.reservations).reservations == then.reservations


def test_a_settled_booking_whose_named_node_is_gone_is_not_kept():
    """Found by the property test below: the job names two nodes and is booked on the one
    that stays; once the other is gone its rules allow no node, digest or not."""
    nodes = [node(1), node(2)]
    busy = [running(101, 10.0, (1, 0, 8))]
    pinned = job(1, spec(1, boards(8)), duration=10.0, node_names=frozenset({"n1", "n2"}))
    busy.append(running(102, 20.0, (2, 0, 8)))
    first = schedule(nodes, busy, [pinned], 0.0)
    assert [p.node_id for p in first.reservations[1].placements] == [1]
    spared = schedule([node(1)], busy[:1], [pinned], 0.0, first.reservations,
                      previous=first.digest)  # fmt: skip
    assert spared.reservations[1].start is None
    assert spared.reservations == schedule([node(1)], busy[:1], [pinned], 0.0,
                                           first.reservations).reservations  # fmt: skip


def test_a_digest_from_a_later_moment_is_not_used(searches):
    nodes = [node(1)]
    busy = [running(101, 30.0, (1, 0, 8))]
    k = job(1, spec(1, boards(8)), duration=10.0)
    first = schedule(nodes, busy, [k], 20.0)
    searches.clear()
    schedule(nodes, busy, [k], 10.0, first.reservations, previous=first.digest)
    assert searches == [k.id]


def _change(draw, nodes, busy, queue, result):
    """One change between two passes, as the worker sees them: running jobs end early,
    queued ones leave, time passes, a node changes."""
    kind = draw(st.sampled_from(("end", "shorter", "leave", "time", "node", "nothing")))
    now = 0.0
    if kind == "end" and busy:
        busy = [j for j in busy if not draw(st.booleans())]
    elif kind == "shorter" and busy:  # its owner cut its duration (SPEC J21)
        k = draw(st.integers(0, len(busy) - 1))
        cut = replace(busy[k], ends_at=draw(st.floats(0.5, busy[k].ends_at)))
        busy = [*busy[:k], cut, *busy[k + 1 :]]
    elif kind == "leave" and queue:
        queue = [j for j in queue if not draw(st.booleans())]
    elif kind == "time":
        later = [r.start for r in result.reservations.values() if r.start] + [
            j.ends_at for j in busy
        ]
        now = draw(st.floats(0.0, min(later, default=10.0), allow_nan=False))
        busy = [j for j in busy if j.ends_at > now]
    elif kind == "node":
        k = draw(st.integers(0, len(nodes) - 1))
        if draw(st.booleans()):  # taken out of scheduling
            nodes = [*nodes[:k], *nodes[k + 1 :]]
        else:  # its driver changed, or it left its pool
            changed = draw(st.sampled_from(({"driver": 1}, {"driver": None}, {"pool": None})))
            nodes = [*nodes[:k], replace(nodes[k], **changed), *nodes[k + 1 :]]
    return nodes, busy, queue, now


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.data(), st.sampled_from((None, 2)))
def test_the_digest_never_changes_the_plan(scenario, data, budget):
    nodes, busy, _, queue, _ = scenario
    options = {} if budget is None else {"budget": budget}
    first = schedule(nodes, busy, queue, 0.0, **options)
    nodes, busy, queue, now = _change(data.draw, nodes, busy, queue, first)
    committed = {j.id: first.reservations[j.id] for j in queue}
    spared = schedule(nodes, busy, queue, now, committed, previous=first.digest, **options)
    searched = schedule(nodes, busy, queue, now, committed, **options)
    if spared.profile.cut_short or searched.profile.cut_short:
        # A search the budget cut short appends the job where the nodes it walked fall
        # idle, and which it walks first depends on what earlier searches of the pass
        # learnt (a spared search learns nothing): such a plan may differ, and each is a
        # plan that holds.
        for plan in (spared, searched):
            assert_feasible(nodes, busy, now, plan, queue)
    else:
        assert spared.reservations == searched.reservations
    # And the digest that pass leaves serves the one after it alike.
    third = schedule(nodes, busy, queue, now, spared.reservations, previous=spared.digest)
    assert third.reservations == schedule(nodes, busy, queue, now, spared.reservations).reservations
