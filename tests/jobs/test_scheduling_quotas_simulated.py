"""The whole pass simulated forward with random quota caps (SPEC G1,
jobs/scheduling/quotas.py), and the cases it found. No cap is ever exceeded by what a
pass admits; a job the pass plans keeps its latest start (held jobs rejoin behind the
promises made meanwhile); within a cap, first come first served; every job that fits its
caps at all starts in the end."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.scheduling import Alternative, Placement, RunningJob, SchedNode, schedule
from jobs.scheduling.passes import joined_at
from jobs.scheduling.quotas import EIGHTHS, Cap, asks, eighths, gate
from jobs.scheduling.reasons import HeldForQuota
from resources.placement.capacity import Demand, NodeState
from tests.jobs.test_scheduling_property import assert_feasible, scenarios
from tests.jobs.test_scheduling_quotas import GPU, OTHER, cap, job

# --- the whole pass, simulated forward -----------------------------------------------------


@st.composite
def quota_scenarios(draw):
    nodes, running, ends, queue, runtimes = draw(scenarios())
    # Mostly the capped teams, and small maximums: contention is what is being tested.
    project = {j.id: draw(st.sampled_from((1, 1, 2, 3))) for j in [*running, *queue]}
    queue = [replace(j, project=project[j.id]) for j in queue]
    caps = []
    for k in range(draw(st.integers(1, 3))):
        projects = draw(st.sampled_from(((1,), (1,), (2,), (1, 2))))
        pool = draw(st.sampled_from((None, None, 1)))
        maximum = draw(st.integers(0, 4 * EIGHTHS))
        caps.append(Cap(k, f"team-{k}", frozenset(projects), draw(st.sampled_from((1, 2))),
                        pool, maximum))  # fmt: skip
    return nodes, running, ends, queue, runtimes, caps, project


def held_eighths(caps, nodes, running_jobs, project) -> dict[int, int]:
    """Eighths of boards each cap's projects hold now, from the running jobs' placements."""
    by_id = {n.id: n for n in nodes}
    used = {c.id: 0 for c in caps}
    for running in running_jobs:
        for placement in running.holdings:
            node = by_id[placement.node_id]
            if node.state.model is None:
                continue
            share = len(placement.slots) * EIGHTHS // max(node.state.slices, 1)
            for c in caps:
                if (project.get(running.id) in c.projects and node.state.model == c.model
                        and c.pool in (None, node.pool)):  # fmt: skip
                    used[c.id] += share
    return used


def simulate_with_caps(nodes, running, ends, queue, runtimes, caps, project):
    live = {j.id: (j, ends[j.id]) for j in running}
    waiting = {j.id: j for j in queue}
    since: dict[int, float] = {}
    now, committed, promised, started, held_last = 0.0, None, {}, {}, frozenset()
    planned_once: set[int] = set()
    for _ in range(200):
        current = [replace(j, submitted_at=max(j.submitted_at, since.get(j.id, 0.0)))
                   for j in waiting.values()]  # fmt: skip
        before = held_eighths(caps, nodes, [j for j, _ in live.values()], project)
        result = schedule(nodes, [j for j, _ in live.values()], current, now, committed,
                          caps=caps, used=before, rejoining=held_last)  # fmt: skip
        assert_feasible(nodes, [j for j, _ in live.values()], now, result, queue)
        # A job let in after being held arrives now: one of a better class (priority, then
        # resubmitted after a fault) comes ahead of promises, as any such arrival does.
        joined = [j for j in result.order if j.id in held_last]
        for job_id in list(planned_once):
            mine = waiting.get(job_id)
            if mine and any(j.queue_key[:2] < mine.queue_key[:2] for j in joined):
                promised.pop(job_id, None)
                planned_once.discard(job_id)
        # No job planned before is held now: nothing else comes ahead of it here.
        assert not planned_once & set(result.quota.held)
        for job_id, reservation in result.reservations.items():
            if reservation.start is not None:
                planned_once.add(job_id)
                promised.setdefault(job_id, reservation.start)
        # Within a cap, nobody passes a job held on it (unless that one can never start), in
        # the order the gate takes them: a job held in the last pass comes as joining now.
        joining = joined_at(current, now)
        key = {
            j.id: (replace(j, submitted_at=max(j.submitted_at, joining)) if j.id in held_last
                   else j).queue_key
            for j in current
        }  # fmt: skip
        for held_id, reason in result.quota.held.items():
            if reason.never:
                continue
            c = next(c for c in caps if c.holder == reason.holder)
            passed = [
                j.id for j in result.quota.plannable
                if asks(j, c) and key[j.id] > key[held_id] and not result.quota.never(j)
            ]  # fmt: skip
            assert not passed, (held_id, passed)
        admitted_now = {a.job_id: a for a in result.admissions}
        after = dict(before)
        for job_id, admission in admitted_now.items():
            job = waiting.pop(job_id)
            alternative = next(a for a in job.alternatives if a.spec_id == admission.spec_id)
            for c in caps:
                if c.covers(job.project, alternative, job.pool):
                    after[c.id] += eighths(replace(alternative, nodes=len(admission.placements)))
            started[job_id] = now
            live[job_id] = (RunningJob(job_id, now + job.duration, admission.placements),
                            now + runtimes[job_id])  # fmt: skip
        for c in caps:
            if after[c.id] > before[c.id]:  # it admitted under this cap: within its maximum
                assert after[c.id] <= c.maximum, (c, before[c.id], after[c.id])
        at = joining  # the stamp the pass planned with
        for planned in result.quota.plannable:  # let in after being held: joins now
            if planned.id in held_last and planned.id not in since:
                since[planned.id] = at
        held_last = frozenset(result.quota.held)
        if not waiting or not live:
            break
        committed = {j: result.reservations[j] for j in waiting if j in result.reservations}
        now = min(end for _, end in live.values())
        for job_id in [k for k, (_, end) in live.items() if end <= now]:
            del live[job_id]
    return promised, started, waiting


def test_a_spec_no_node_could_ever_hold_lets_nobody_in_past_a_cap():
    """Two specs: one of a model no node has, one under vision's cap, which is full. The
    job is held at the cap, not let in on the spec it can never start on: planned that way,
    it said "can never start" and, once vision had room, came ahead of the promises made
    while it waited (found by the simulation below)."""
    nodes = [SchedNode(NodeState(1, "a", 64000, 65536, 2, 1, GPU))]
    nowhere, here = Demand(1000, 1024, boards=1, model=OTHER), Demand(1000, 1024, boards=1,
                                                                     model=GPU)  # fmt: skip
    both = replace(job(1), alternatives=(Alternative(10, nowhere, 1), Alternative(11, here, 1)))
    result = schedule(nodes, [], [both], 0.0, caps=[cap(1, 1)], used={1: EIGHTHS})
    assert result.quota.held[1] == HeldForQuota("vision", GPU, None, 8, 8, 8)
    assert not result.quota.held[1].never
    assert result.quota.holds(both) is not None  # a draft like it is told the same
    # With room under the cap, it is planned on the spec it can start on.
    free = schedule(nodes, [], [both], 0.0, caps=[cap(1, 1)], used={})
    assert [a.spec_id for a in free.quota.plannable[0].alternatives] == [11]
    assert free.reservations[1].start == 0.0


def test_a_job_no_node_could_ever_hold_takes_nothing_of_its_cap():
    """Vision may hold 4 boards; its first job asks 4 on one node, but no node has 4: it can
    never start, and says so. Counted, it took vision's whole maximum and held the next job
    back for boards it would never use (found by the simulation below)."""
    nodes = [SchedNode(NodeState(1, "a", 64000, 65536, 2, 1, GPU))]
    queue = [job(1, boards=4), job(2, boards=1, at=1)]
    result = schedule(nodes, [], queue, 0.0, caps=[cap(1, 4)], used={})
    assert result.quota.never(queue[0]) and not result.quota.held
    assert result.quota.taken == {1: 8}  # the second job's board only
    assert [a.job_id for a in result.admissions] == [2]
    never = result.reservations[1]
    assert never.start is None and not isinstance(never.reason, HeldForQuota)


def test_a_job_let_in_keeps_its_place_over_one_held_since():
    """Vision may hold 3 boards. P (3 boards) and Q (1 board) wait held while vision's
    running job holds a board. When it ends, P is let in first and promised the node once
    speech's job leaves it at 2; Q, behind P, stays held. At 2 Q has been held longer, but P
    joined first: P keeps its promise, and Q is not let in ahead of it (found by the
    simulation below: the gate took Q in its first place, before P)."""
    nodes = [SchedNode(NodeState(1, "a", 64000, 65536, 3, 1, GPU))]
    p, q = job(3, boards=3), job(8, boards=1)
    caps = [cap(1, 3)]
    mine = RunningJob(100, 1.0, (Placement(1, 1000, 1024, (0,)),))
    first = schedule(nodes, [mine], [p, q], 0.0, caps=caps, used={1: 8})
    assert set(first.quota.held) == {3, 8}
    theirs = RunningJob(9, 2.0, (Placement(1, 1000, 1024, (1,)),))
    then = schedule(nodes, [theirs], [p, q], 1.0, caps=caps, used={},
                    rejoining=frozenset({3, 8}))  # fmt: skip
    assert then.reservations[3].start == 2.0 and set(then.quota.held) == {8}
    joined = replace(p, submitted_at=joined_at([p, q], 1.0))  # as the pass stored it
    later = schedule(nodes, [], [joined, q], 2.0, then.reservations, caps=caps, used={},
                     rejoining=frozenset({8}))  # fmt: skip
    assert [a.job_id for a in later.admissions] == [3]
    assert set(later.quota.held) == {8}


def test_a_job_gains_no_spec_that_would_hold_back_a_promise_behind_it():
    """Vision may hold 2 boards and holds 1 until 1. P asks 2 vision boards or 1 board of
    the other model; Q, behind it, 1 vision board. At 0 P is let in on the other spec only
    and promised node b at 5; Q is let in and promised a board at 1. At 1 vision's room is
    back: counted at its 2 boards again, P held Q back and broke its promise (found by the
    simulation below). P stays on the spec it was promised while Q's promise needs it."""
    nodes = [SchedNode(NodeState(1, "a", 64000, 65536, 2, 1, GPU)),
             SchedNode(NodeState(2, "b", 64000, 65536, 1, 1, OTHER))]  # fmt: skip
    mine = RunningJob(100, 1.0, (Placement(1, 1000, 1024, (0,)),))
    theirs = RunningJob(101, 1.0, (Placement(1, 1000, 1024, (1,)),))
    other = RunningJob(102, 5.0, (Placement(2, 1000, 1024, (0,)),))
    either = (Alternative(30, Demand(1000, 1024, boards=2, model=GPU), 1),
              Alternative(31, Demand(1000, 1024, boards=1, model=OTHER), 1))  # fmt: skip
    p, q = replace(job(3), alternatives=either), job(4, at=1)
    caps = [cap(1, 2)]
    first = schedule(nodes, [mine, theirs, other], [p, q], 0.0, caps=caps, used={1: EIGHTHS})
    assert not first.quota.held
    assert (first.reservations[3].spec_id, first.reservations[3].start) == (31, 5.0)
    assert first.reservations[4].start == 1.0
    then = schedule(nodes, [other], [p, q], 1.0, first.reservations, caps=caps, used={})
    assert not then.quota.held
    assert [a.job_id for a in then.admissions] == [4]
    assert (then.reservations[3].spec_id, then.reservations[3].start) == (31, 5.0)
    # With no promise behind it, P may take its larger spec again.
    alone = schedule(nodes, [other], [p], 1.0, {3: first.reservations[3]}, caps=caps, used={})
    assert [(a.job_id, a.spec_id) for a in alone.admissions] == [(3, 30)]
    # The gate alone: Q's promise is what keeps P to its promised spec.
    assert 4 in gate([p, q], caps, {}).held
    kept = gate([p, q], caps, {}, committed=first.reservations)
    assert not kept.held and [a.spec_id for a in kept.plannable[0].alternatives] == [31]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(quota_scenarios())
def test_caps_are_never_exceeded_and_promises_hold(scenario):
    caps = scenario[5]
    promised, started, left = simulate_with_caps(*scenario)
    for job_id, bound in promised.items():
        assert started.get(job_id, float("inf")) <= bound, (job_id, started.get(job_id), bound)
    # What is left at the end either never fits its caps or never fits the nodes.
    for waiting in left.values():
        too_big = any(asks(waiting, c) > c.maximum for c in caps)
        assert too_big or waiting.id not in promised, waiting
