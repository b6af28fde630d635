"""Quota maximums at admission (SPEC G1, jobs/scheduling/quotas.py): examples of the gate,
what a job asks under a cap, who runs on borrowed boards. The whole pass simulated forward
with random caps, and the cases it found, are in test_scheduling_quotas_simulated.py."""

from __future__ import annotations

import gc
import weakref
from dataclasses import replace

from jobs.scheduling import Alternative, Placement, QueuedJob, RunningJob, SchedNode, schedule
from jobs.scheduling.predict import room_to_grow
from jobs.scheduling.quotas import (
    EIGHTHS,
    NO_MAXIMUM,
    Borrowed,
    Cap,
    asks,
    borrowing,
    eighths,
    gate,
)
from jobs.scheduling.reasons import HeldForQuota, words
from resources.placement.capacity import Demand, NodeState

GPU, OTHER = 1, 2


def job(id, boards=1, nodes=1, project=1, model=GPU, pool=None, priority=0, at=0.0, slices=1):
    demand = Demand(1000, 1024, boards=boards if slices == 1 else 0, slice_divisor=slices,
                    model=model)  # fmt: skip
    return QueuedJob(
        id, (Alternative(id * 10, demand, nodes),), 10.0, priority=priority, submitted_at=at,
        pool=pool, allowed_pools=frozenset({pool}) if pool else frozenset(), project=project,
    )  # fmt: skip


def cap(id, maximum_boards, projects=(1,), model=GPU, pool=None, holder="vision"):
    return Cap(id, holder, frozenset(projects), model, pool, maximum_boards * EIGHTHS)


def test_what_a_job_asks_under_a_cap():
    assert eighths(job(1, boards=2, nodes=3).alternatives[0]) == 48
    assert eighths(job(1, slices=4).alternatives[0]) == 2  # a quarter of a board
    assert eighths(Alternative(1, Demand(1000, 1024), 4)) == 0  # CPU only
    everywhere, in_pool = cap(1, 8), cap(2, 8, pool=5)
    assert asks(job(1, boards=2), everywhere) == 16
    assert asks(job(1, boards=2, pool=5), everywhere) == 16  # every node: pools too
    assert asks(job(1, boards=2), in_pool) == 0  # shared nodes: not that pool's
    assert asks(job(1, boards=2, pool=5), in_pool) == 16
    assert asks(job(1, boards=2, model=OTHER), everywhere) == 0
    assert asks(job(1, boards=2, project=2), everywhere) == 0
    # Two specs: it asks the most of those the cap covers (it runs on one, unknown yet).
    two = replace(job(1, boards=1), alternatives=(
        Alternative(10, Demand(1000, 1024, boards=1, model=GPU), 2),
        Alternative(11, Demand(1000, 1024, boards=4, model=GPU), 1),
        Alternative(12, Demand(1000, 1024, boards=8, model=OTHER), 1),
    ))  # fmt: skip
    assert asks(two, everywhere) == 32


def test_a_team_at_its_maximum_waits_first_come_first_served():
    queue = [
        job(1, boards=4),  # 4 held + 4 = 8: in
        job(2, boards=1, at=1),  # 9 > 8: held
        job(3, boards=1, at=2, project=2),  # another team: in
        job(4, boards=1, at=3),  # vision again: held behind job 2, though 1 board is free
    ]
    result = gate(queue, [cap(1, 8)], {1: 4 * EIGHTHS})
    assert [j.id for j in result.plannable] == [1, 3]
    assert set(result.held) == {2, 4}
    assert result.held[2] == HeldForQuota("vision", GPU, None, 64, 64, 8)
    assert words(result.held[2]).startswith("held: vision is at its maximum (8 of 8 boards")
    # Job 4 would fit, but job 2 is first: it is held behind it.
    assert result.held[4].behind and not result.held[2].behind
    assert words(result.held[4]).startswith("held: a job of vision's ahead of it waits")
    # A draft of vision's waits too; one of another team, or of CPU only, does not.
    assert result.holds(job(9, boards=1)) is not None
    assert result.holds(job(9, boards=1, project=2)) is None
    assert (
        result.holds(replace(job(9), alternatives=(Alternative(1, Demand(1000, 1024), 1),))) is None
    )


def test_a_department_cap_holds_all_its_projects_in_order():
    department = cap(1, 6, projects=(1, 2), holder="research")
    vision = cap(2, 4, projects=(1,))
    queue = [job(1, boards=4), job(2, boards=3, project=2, at=1), job(3, boards=1, project=2, at=2),
             job(4, boards=1, project=3, at=3)]  # fmt: skip
    result = gate(queue, [department, vision], {})
    # 4 of research's 6 to vision; speech's 3 would make 7: held, and so is its next job.
    assert [j.id for j in result.plannable] == [1, 4]
    assert result.held[2].holder == result.held[3].holder == "research"


def test_a_job_asking_more_than_a_maximum_can_never_start_and_holds_nobody_back():
    result = gate([job(1, boards=8, nodes=2), job(2, boards=2, at=1)], [cap(1, 8)], {})
    assert result.held[1].asks == 128 and result.held[1].maximum == 64
    assert result.held[1].never
    assert words(result.held[1]) == "can never start: it asks 16 boards, vision's maximum is 8"
    assert [j.id for j in result.plannable] == [2]


def test_an_elastic_job_is_let_in_on_the_nodes_its_caps_have_room_for():
    elastic = replace(job(1, boards=2), alternatives=(
        Alternative(10, Demand(1000, 1024, boards=2, model=GPU), 4, 1),
    ))  # fmt: skip
    result = gate([elastic], [cap(1, 8)], {1: 3 * EIGHTHS})  # 5 boards of room: 2 nodes
    (planned,) = result.plannable
    assert (planned.alternatives[0].nodes, planned.alternatives[0].min_nodes) == (2, 1)
    assert result.taken[1] == 7 * EIGHTHS
    # Below its minimum it waits.
    strict = replace(elastic, alternatives=(replace(elastic.alternatives[0], min_nodes=3),))
    assert 1 in gate([strict], [cap(1, 8)], {1: 3 * EIGHTHS}).held


def test_a_job_is_let_in_on_the_specs_that_fit_its_caps():
    either = replace(job(1), alternatives=(
        Alternative(10, Demand(1000, 1024, boards=8, model=GPU), 1),
        Alternative(11, Demand(1000, 1024, boards=1, model=GPU), 2),
        Alternative(12, Demand(4000, 1024), 1),
    ))  # fmt: skip
    result = gate([either], [cap(1, 4)], {})
    assert [a.spec_id for a in result.plannable[0].alternatives] == [11, 12]
    assert result.taken[1] == 2 * EIGHTHS  # what it may hold now: the spec that fits
    # Not "never" while one spec fits some day, though none fits now.
    only_gpu = replace(either, alternatives=either.alternatives[:2])
    held = gate([only_gpu], [cap(1, 4)], {1: 4 * EIGHTHS}).held[1]
    assert not held.never and held.asks == 2 * EIGHTHS


def test_an_elastic_job_grows_only_within_its_caps():
    nodes = [SchedNode(NodeState(1, "a", 64000, 65536, 8, 1, GPU))]
    running = [RunningJob(7, 50.0, (Placement(1, 1000, 1024, (0, 1)),))]
    requeued = replace(job(7), resubmitted=True, alternatives=(
        Alternative(70, Demand(1000, 1024, boards=2, model=GPU), 4, 1),
    ))  # fmt: skip
    assert room_to_grow(nodes, running, [], requeued, 0.0) == 4
    # Vision may hold 4 boards; this job's own 2 are given back when it is requeued.
    assert room_to_grow(nodes, running, [], requeued, 0.0, caps=[cap(1, 4)], used={1: 0}) == 2
    assert room_to_grow(nodes, running, [], requeued, 0.0, caps=[cap(1, 4)], used={1: 24}) == 0


def test_without_caps_every_job_is_planned():
    queue = [job(1), job(2)]
    assert gate(queue, [], {}).plannable == queue


def test_a_pass_plans_only_what_the_caps_let_in():
    nodes = [SchedNode(NodeState(1, "a", 64000, 65536, 8, 1, GPU))]
    queue = [job(1, boards=4), job(2, boards=4, at=1), job(3, boards=2, project=2, at=2)]
    result = schedule(nodes, [], queue, 0.0, caps=[cap(1, 4)], used={})
    assert [a.job_id for a in result.admissions] == [1, 3]
    held = result.reservations[2]
    assert held.start is None and isinstance(held.reason, HeldForQuota)
    assert held.position == 3  # after every planned job


def test_a_job_let_in_after_being_held_comes_behind_the_promises_made_meanwhile():
    """Vision holds its maximum (4 boards) until 10; its job H waits held. Speech's X, newer,
    is promised the whole node at 10. At 10 vision's room comes back: H joins the queue as
    of then, behind X, which starts as promised."""
    nodes = [SchedNode(NodeState(1, "a", 64000, 65536, 8, 1, GPU))]
    running = [RunningJob(100, 10.0, (Placement(1, 1000, 1024, (0, 1, 2, 3)),))]
    h, x = job(1, boards=4, at=0), job(2, boards=8, project=2, at=1)
    caps = [cap(1, 4)]
    first = schedule(nodes, running, [h, x], 0.0, caps=caps, used={1: 32})
    assert 1 in first.quota.held and first.reservations[2].start == 10.0
    later = schedule(nodes, [], [h, x], 10.0, {2: first.reservations[2]}, caps=caps, used={},
                     rejoining=frozenset({1}))  # fmt: skip
    assert [a.job_id for a in later.admissions] == [2]
    assert later.reservations[1].start == 20.0  # after X, which holds the node until 20
    assert later.order[-1].id == 1 and later.order[-1].submitted_at > 10.0  # behind X
    # Coming back with its first place, it would still not take X's promise: a job with no
    # promise is searched for beside the promises of its class (rebook.recommit_all).
    naive = schedule(nodes, [], [h, x], 10.0, {2: first.reservations[2]}, caps=caps, used={})
    assert [a.job_id for a in naive.admissions] == [2]
    assert naive.reservations[1].start == 20.0 and naive.deferred == {1}


def test_a_pass_with_caps_is_freed_when_dropped():
    """A plan goes when its last reference does, without the collector (paused while a pass
    runs): a cycle through the gate kept a pass's whole plan until the collector ran, and
    raised the peak memory at 10,000 queued from 202 to 346 MB."""
    nodes = [SchedNode(NodeState(1, "a", 64000, 65536, 2, 1, GPU))]
    result = schedule(nodes, [], [job(1, boards=4), job(2)], 0.0, caps=[cap(1, 4)], used={})
    gc.disable()
    try:
        freed = weakref.ref(result)
        del result
        assert freed() is None
    finally:
        gc.enable()


def test_who_runs_on_borrowed_boards():
    vision = Cap(1, "vision", frozenset({1}), GPU, None, NO_MAXIMUM, guaranteed=4 * EIGHTHS)
    research = Cap(2, "research", frozenset({1, 2}), GPU, None, NO_MAXIMUM, guaranteed=0)
    first, second, third = job(1, boards=2), job(2, boards=2, at=1), job(3, boards=1, at=2)
    starts = [(j, j.alternatives[0], 1) for j in (first, second, third)]
    # Vision holds 1 board: with the first job 3 (within its 4), with the second 5 and the
    # third 6: those two run on borrowed boards.
    lent = borrowing(starts, [vision, research], {1: 1 * EIGHTHS, 2: 0})
    assert set(lent) == {2, 3}
    assert lent[2] == Borrowed("vision", GPU, None, 32, 40)
    assert lent[3].holds == 48
    # A department's guarantee is shared out among its projects: only a project's counts.
    assert borrowing(starts, [research], {}) == {}
    # Another model, or a CPU job, borrows nothing.
    cpu = replace(job(4), alternatives=(Alternative(40, Demand(1000, 1024), 1),))
    assert borrowing([(cpu, cpu.alternatives[0], 1)], [vision], {1: 64}) == {}
