"""The latest start is a real upper bound (SPEC J24, Q3, Q5; DESIGN "Scheduling").

Random small clusters, running jobs and queues are simulated forward: running jobs end at any
time up to their ``ends_at``, admitted jobs run any time up to their duration, and a pass
runs at every job end, given the previous pass's reservations. Every job must start by the
latest start the first pass promised, no node may ever be overbooked and no gang may start
short of its minimum.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.scheduling import (
    Alternative,
    Placement,
    QueuedJob,
    RunningJob,
    SchedNode,
    schedule,
)
from jobs.scheduling.reasons import NotYetPlanned
from resources.placement.capacity import Demand, NodeState, take
from tests.strategies import pick

MODELS = (1, 2)


@st.composite
def demands(draw) -> Demand:
    cpu = draw(pick((500, 2000, 4000, 8000)))
    memory = draw(pick((1024, 4096, 16384)))
    kind = draw(pick(("cpu", "boards", "boards", "slice")))
    model = draw(pick(MODELS))
    if kind == "cpu":
        return Demand(cpu, memory)
    if kind == "slice":
        return Demand(cpu, memory, slice_divisor=2, model=model)
    return Demand(cpu, memory, boards=draw(st.integers(1, 4)), model=model)


DEMANDS = demands()


@st.composite
def scenarios(draw):
    nodes = []
    for i in range(draw(st.integers(1, 6))):
        boards = draw(st.integers(0, 8))
        state = NodeState(
            id=i + 1,
            name=f"n{i + 1}",
            cpu_total=draw(pick((8000, 16000, 32000))),
            memory_total=draw(pick((16384, 65536))),
            boards=boards,
            slices=draw(pick((1, 2))),
            model=draw(pick(MODELS)) if boards else None,
        )
        if draw(st.integers(0, 9)) == 0:  # a development environment, held for ever
            take(Demand(1000, 1024), state)
        pool = draw(pick((None, None, 1)))
        nodes.append(SchedNode(state, pool=pool, driver=draw(pick((None, 1, 2)))))

    # Running jobs, placed for real so that they fit; each ends early at a drawn time.
    usage = copy.deepcopy([n.state for n in nodes])
    running, ends = [], {}
    for job_id in range(100, 100 + draw(st.integers(0, 5))):
        demand = draw(DEMANDS)
        holdings = []
        for _ in range(draw(st.integers(1, 3))):
            state = usage[draw(st.integers(0, len(nodes) - 1))]
            slots = take(demand, state)
            if slots is not None:
                holdings.append(Placement(state.id, demand.cpu, demand.memory, tuple(slots)))
        if holdings:
            ends_at = draw(st.integers(1, 60))
            running.append(RunningJob(job_id, float(ends_at), tuple(holdings)))
            ends[job_id] = float(draw(st.integers(1, ends_at)))

    queue, runtimes = [], {}
    names = tuple(n.name for n in nodes)
    for job_id in range(1, draw(st.integers(1, 12)) + 1):
        alternatives = []
        for spec in range(draw(pick((1, 1, 2)))):
            count = draw(st.integers(1, 4))
            elastic = draw(st.booleans())
            minimum = draw(st.integers(1, count)) if elastic else None
            alternatives.append(Alternative(job_id * 10 + spec, draw(DEMANDS), count, minimum))
        duration = draw(st.integers(1, 40))
        pool = draw(pick((None, None, None, 1)))
        queue.append(
            QueuedJob(
                id=job_id,
                alternatives=tuple(alternatives),
                duration=float(duration),
                priority=draw(st.integers(0, 2)),
                resubmitted=draw(st.booleans()),
                submitted_at=float(draw(st.integers(0, 5))),
                node_names=frozenset(draw(st.lists(st.sampled_from(names), max_size=2)))
                if draw(st.integers(0, 4)) == 0
                else frozenset(),
                pool=pool,
                driver=draw(pick((None, None, None, 1))),
                allowed_pools=frozenset({1}) if pool or draw(st.booleans()) else frozenset(),
            )
        )
        runtimes[job_id] = float(draw(st.integers(1, duration)))
    return nodes, running, ends, queue, runtimes


def slots_taken(demand: Demand, node: SchedNode) -> int:
    if demand.slice_divisor > 1:
        return 1
    return demand.boards * node.state.slices


def allowed_on(job: QueuedJob, node: SchedNode) -> bool:
    """SPEC J10–J12 restated: a job's pool (which its project may use), else the shared
    nodes; pinned nodes bring their own pool, which the project must be allowed to use."""
    if job.pool is not None and job.pool not in job.allowed_pools:
        return False
    if job.node_names:
        in_place = (
            node.pool == job.pool
            if job.pool is not None
            else (node.pool is None or node.pool in job.allowed_pools)
        )
        placed = node.name in job.node_names and in_place
    else:
        placed = node.pool == job.pool
    return placed and (job.driver is None or node.driver == job.driver)


def assert_feasible(nodes, live, now, result, queue):
    """The plan itself never overbooks: at every moment, on every node, the running jobs and
    the reservations fit, and no slot is held twice."""
    duration = {job.id: job.duration for job in queue}
    spans = [(now, job.ends_at, p) for job in live for p in job.holdings]
    for job_id, reservation in result.reservations.items():
        if reservation.start is not None:
            end = reservation.start + duration[job_id]
            spans += [(reservation.start, end, p) for p in reservation.placements]
    # Every start is now or some job's end, so a pass comes by then (no start is missed).
    ends = {e for _, e, _ in spans}
    for reservation in result.reservations.values():
        assert reservation.start in ({None, now} | ends), reservation
    for node in nodes:
        mine = [(s, e, p) for s, e, p in spans if p.node_id == node.id]
        for moment in {s for s, _, _ in mine}:
            active = [p for s, e, p in mine if s <= moment < e]
            slots = [slot for p in active for slot in p.slots] + list(node.state.used_slots)
            assert len(slots) == len(set(slots)), f"{node.name} slot twice at {moment}"
            assert sum(p.cpu for p in active) + node.state.cpu_used <= node.state.cpu_total
            assert sum(p.memory for p in active) + node.state.memory_used <= (
                node.state.memory_total
            )


def simulate(nodes, running, ends, queue, runtimes, budget=None, compressions=None, *,
             standings=None, arrivals=(), fresh=None):  # fmt: skip
    """Run passes at every job end; return each job's first promise and the real starts.

    ``standings(k)``: the teams' fair-share standings at pass ``k`` (SPEC G3; a job's team is
    its id modulo 3), which reorder the queue as the teams' use changes; ``arrivals``: jobs
    submitted later, as (pass number, job), stamped with that pass's moment."""
    options = {} if budget is None else {"budget": budget}
    if compressions is not None:
        options["compressions"] = compressions
    if fresh is not None:
        options["fresh"] = fresh
    by_id = {n.id: n for n in nodes}
    used = {n.id: [n.state.cpu_used, n.state.memory_used, set(n.state.used_slots)] for n in nodes}
    for job in running:
        for held in job.holdings:
            use = used[held.node_id]
            use[0], use[1] = use[0] + held.cpu, use[1] + held.memory
            use[2] |= set(held.slots)
    live = {job.id: (job, ends[job.id]) for job in running}
    waiting = {job.id: job for job in queue}
    now, committed, promised, started, digest, carried = 0.0, None, {}, {}, None, None
    everyone = [*queue, *(job for _, job in arrivals)]
    for number in range(10_000):
        for at, job in arrivals:
            if at == number:
                waiting[job.id] = replace(job, submitted_at=now)
        if standings is not None:
            fair = standings(number)
            waiting = {i: replace(job, fair=fair[i % 3]) for i, job in waiting.items()}
        result = schedule(
            nodes, [j for j, _ in live.values()], waiting.values(), now, committed, **options
        )
        if digest is not None:
            # The last pass's digest spares searches, never changes the plan.
            spared = schedule(
                nodes, [j for j, _ in live.values()], waiting.values(), now, committed,
                previous=digest, **options,
            )  # fmt: skip
            if compressions is None:  # else the digest lets the pass reach further
                assert spared.reservations == result.reservations
            # Started from the last pass's profile (the worker's way), the plan is the same.
            warmed = schedule(
                nodes, [j for j, _ in live.values()], waiting.values(), now, committed,
                previous=digest, warm=carried, **options,
            )  # fmt: skip
            assert warmed.reservations == spared.reservations
            result = warmed
        digest, carried = result.digest, result.hand_over()
        assert_feasible(nodes, [j for j, _ in live.values()], now, result, everyone)
        for job_id, reservation in result.reservations.items():
            if not isinstance(reservation.reason, NotYetPlanned):  # no promise yet
                promised.setdefault(job_id, reservation.start)
        for job_id, reservation in result.reservations.items():
            before = committed[job_id].start if committed and job_id in committed else None
            if before is not None:
                assert reservation.start is not None and reservation.start <= before, (
                    f"job {job_id} moved later: {before} -> {reservation.start}"
                )
        for admission in result.admissions:
            job = waiting.pop(admission.job_id)
            spec = next(a for a in job.alternatives if a.spec_id == admission.spec_id)
            assert spec.min_nodes <= len(admission.placements) <= spec.nodes, "partial gang"
            for placement in admission.placements:
                node = by_id[placement.node_id]
                assert allowed_on(job, node), f"job {job.id} placed on forbidden {node.name}"
                assert (placement.cpu, placement.memory) == (spec.demand.cpu, spec.demand.memory)
                assert len(placement.slots) == slots_taken(spec.demand, node)
                assert not spec.demand.wants_boards or spec.demand.model == node.state.model
                use = used[placement.node_id]
                assert not use[2] & set(placement.slots), f"slot booked twice on {node.name}"
                use[0], use[1] = use[0] + placement.cpu, use[1] + placement.memory
                use[2] |= set(placement.slots)
                assert use[0] <= node.state.cpu_total and use[1] <= node.state.memory_total
            started[job.id] = now
            ending = RunningJob(job.id, now + job.duration, admission.placements)
            live[job.id] = (ending, now + runtimes[job.id])
        if not waiting and all(at <= number for at, _ in arrivals):
            break
        committed = {job_id: result.reservations[job_id] for job_id in waiting}
        if result.unplanned:  # the next part of the queue is planned at once (admission.db)
            continue
        if not live and all(at <= number for at, _ in arrivals):
            # Nothing left to wait for: whatever still waits was promised nothing.
            assert all(promised[job_id] is None for job_id in waiting), (waiting, promised)
            break
        if not live:  # the next arrival comes a moment later
            now += 1.0
            continue
        now = min(end for _, end in live.values())
        for job_id in [job_id for job_id, (_, end) in live.items() if end <= now]:
            job, _ = live.pop(job_id)
            for held in job.holdings:
                use = used[held.node_id]
                use[0], use[1] = use[0] - held.cpu, use[1] - held.memory
                use[2] -= set(held.slots)
    return promised, started


def check(scenario, budget=None, compressions=None, standings=None, arrivals=(), fresh=None):
    nodes, running, ends, queue, runtimes = scenario
    promised, started = simulate(nodes, running, ends, queue, runtimes, budget, compressions,
                                 standings=standings, arrivals=arrivals, fresh=fresh)  # fmt: skip
    for job in [*queue, *(job for _, job in arrivals)]:
        bound = promised[job.id]
        if bound is None:
            assert job.id not in started, f"job {job.id} was promised nothing yet started"
        else:
            assert started.get(job.id, float("inf")) <= bound, (
                f"job {job.id} started at {started.get(job.id)}, promised by {bound}"
            )


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_every_job_starts_by_its_latest_start(scenario):
    check(scenario)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from((0, 1, 3, 8)))
def test_the_bound_holds_when_the_search_budget_runs_out(scenario, budget):
    # Tiny budgets cut searches short at every stage: appended where nodes fall idle.
    check(scenario, budget=budget)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from((0, 1, 2)))
def test_the_bound_holds_when_a_pass_stops_moving_reservations_earlier(scenario, compressions):
    # A pass out of compressions leaves the rest of the kept reservations as they are.
    check(scenario, compressions=compressions)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from((1, 2, 3)), st.booleans())
def test_the_bound_holds_when_a_pass_plans_only_a_part_of_the_queue(scenario, fresh, moving):
    # A long queue is planned core.FRESH jobs a pass: the rest hold no promise until a
    # later pass (asked for at once) reaches them; then theirs holds like any other.
    draws = [(0.0, 1.0, 3.0), (3.0, 0.4, 0.0)]
    check(scenario, fresh=fresh, standings=(lambda k: draws[k % 2]) if moving else None)


STANDINGS = st.lists(st.tuples(*[pick((0.0, 0.4, 1.0, 1.7, 3.0))] * 3), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), STANDINGS)
def test_the_bound_holds_as_fair_share_reorders_the_queue(scenario, draws):
    """SPEC G3: the teams' standings change from pass to pass (their use decays, their jobs
    run), reordering the jobs of a priority class; no promise moves later for it."""
    check(scenario, standings=lambda k: draws[k % len(draws)])


@st.composite
def later_jobs(draw, scenario):
    """Jobs of the scenario's kind submitted at later passes, at the normal priority: under
    fair share a team below its share puts them ahead of the jobs already promised."""
    _, _, _, queue, runtimes = scenario
    arrivals = []
    for job in draw(st.lists(st.sampled_from(queue), max_size=4, unique_by=lambda j: j.id)):
        later = replace(job, id=job.id + 50, priority=0, resubmitted=False)
        runtimes[later.id] = runtimes[job.id]
        arrivals.append((draw(st.integers(1, 4)), later))
    return arrivals


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), scenarios(), STANDINGS)
def test_a_later_job_of_a_team_below_its_share_never_breaks_a_promise(data, scenario, draws):
    arrivals = data.draw(later_jobs(scenario))
    check(scenario, standings=lambda k: draws[k % len(draws)], arrivals=arrivals)
