"""The scheduling core (SPEC J9–J12, J14, J17, Q2, Q3, F5): order, gang fit, backfill.

The builders at the top are shared with the other test_scheduling_* modules.
"""

from __future__ import annotations

from jobs.scheduling import (
    Alternative,
    HeldForQueue,
    NeverFits,
    NoAllowedNode,
    Placement,
    QueuedJob,
    RunningJob,
    SchedNode,
    Shortfall,
    TooFewNodes,
    admit,
    order,
    plan,
    schedule,
    words,
)
from resources.placement.capacity import Demand, NodeState, take

A100, V100 = 1, 2
GiB = 1024


def node(
    node_id: int,
    boards: int = 8,
    *,
    model: int | None = A100,
    slices: int = 1,
    pool: int | None = None,
    driver: int | None = None,
    cpu: int = 64_000,
    memory: int = 512 * GiB,
    name: str | None = None,
) -> SchedNode:
    state = NodeState(
        id=node_id,
        name=name or f"n{node_id}",
        cpu_total=cpu,
        memory_total=memory,
        boards=boards,
        slices=slices,
        model=model if boards else None,
    )
    return SchedNode(state, pool=pool, driver=driver)


def boards(count: int, model: int = A100, cpu: int = 8000, memory: int = 64 * GiB) -> Demand:
    return Demand(cpu=cpu, memory=memory, boards=count, model=model)


def spec(spec_id: int, demand: Demand, nodes: int = 1, min_nodes: int | None = None):
    return Alternative(spec_id, demand, nodes, min_nodes)


def job(job_id: int, *alternatives: Alternative, duration: float = 100.0, **fields) -> QueuedJob:
    fields.setdefault("submitted_at", float(job_id))
    return QueuedJob(job_id, alternatives or (spec(1, boards(1)),), duration, **fields)


def running(job_id: int, ends_at: float, *held: tuple[int, int, int]) -> RunningJob:
    """A running job holding, per replica, (node id, first board, boards) of an A100 node."""
    return RunningJob(
        job_id,
        ends_at,
        tuple(
            Placement(n, 8000 * count, 64 * GiB * count, tuple(range(first, first + count)))
            for n, first, count in held
        ),
    )


def nodes_used(placements) -> list[int]:
    return [p.node_id for p in placements]


class TestOrder:
    def test_priority_then_resubmitted_then_submit_time_then_id(self):
        queue = [
            job(1, submitted_at=5.0),
            job(2, submitted_at=1.0),
            job(3, submitted_at=9.0, priority=1),
            job(4, submitted_at=7.0, resubmitted=True),
            job(5, submitted_at=8.0, priority=2),
            job(6, submitted_at=1.0),
        ]
        assert [j.id for j in order(queue)] == [5, 3, 4, 2, 6, 1]

    def test_positions_follow_the_order(self):
        queue = [job(1, submitted_at=2.0), job(2, submitted_at=1.0)]
        reservations = plan([node(1)], [], queue, 0.0)
        assert (reservations[2].position, reservations[1].position) == (1, 2)


class TestGang:
    def test_all_nodes_start_together(self):
        nodes = [node(1), node(2), node(3)]
        [admission] = admit(nodes, [], [job(1, spec(7, boards(8), nodes=3))], 0.0)
        assert admission.spec_id == 7
        assert sorted(nodes_used(admission.placements)) == [1, 2, 3]
        assert all(len(p.slots) == 8 for p in admission.placements)

    def test_no_partial_gang(self):
        nodes = [node(1), node(2)]
        busy = [running(100, 50.0, (2, 0, 8))]
        result = schedule(nodes, busy, [job(1, spec(7, boards(8), nodes=2))], 0.0)
        assert result.admissions == []
        reservation = result.reservations[1]
        assert reservation.start == 50.0 and reservation.blockers == (100,)
        assert reservation.reason == TooFewNodes(need=2, fit=1)
        assert words(reservation.reason) == "needs 2 nodes at once; only 1 can take it now"

    def test_replicas_share_a_node_and_tight_nodes_go_first(self):
        # n1 has 2 boards free, n2 is idle: four 2-board replicas take n1's gap and 3 of n2's
        # boards pairs, never a third node; the tight node is filled first.
        nodes = [node(1), node(2), node(3)]
        busy = [running(100, 50.0, (1, 0, 6))]
        [admission] = admit(nodes, busy, [job(1, spec(7, boards(2), nodes=4))], 0.0)
        assert nodes_used(admission.placements) == [1, 2, 2, 2]
        assert admission.placements[0].slots == (6, 7)

    def test_elastic_starts_with_what_fits_above_its_minimum(self):
        nodes = [node(1), node(2), node(3), node(4)]
        busy = [running(100, 50.0, (4, 0, 8))]
        [admission] = admit(nodes, busy, [job(1, spec(7, boards(8), nodes=4, min_nodes=2))], 0.0)
        assert len(admission.placements) == 3

    def test_elastic_waits_below_its_minimum(self):
        nodes = [node(1), node(2)]
        busy = [running(100, 50.0, (2, 0, 8))]
        result = schedule(nodes, busy, [job(1, spec(7, boards(8), nodes=2, min_nodes=2))], 0.0)
        assert result.admissions == [] and result.reservations[1].start == 50.0


class TestAlternatives:
    def test_the_first_spec_that_fits_wins(self):
        both = job(1, spec(7, boards(4)), spec(8, boards(2)))
        assert admit([node(1)], [], [both], 0.0)[0].spec_id == 7

    def test_a_later_spec_starts_now_when_the_first_cannot(self):
        both = job(1, spec(7, boards(8)), spec(8, boards(2)))
        busy = [running(100, 50.0, (1, 0, 4))]
        [admission] = admit([node(1)], busy, [both], 0.0)
        assert admission.spec_id == 8

    def test_the_earliest_spec_is_planned_and_ties_go_to_the_first(self):
        both = job(1, spec(7, boards(8)), spec(8, boards(8, model=V100)))
        nodes = [node(1), node(2, model=V100)]
        busy = [running(100, 50.0, (1, 0, 4)), running(101, 30.0, (2, 0, 4))]
        assert plan(nodes, busy, [both], 0.0)[1].spec_id == 8
        busy = [running(100, 30.0, (1, 0, 4)), running(101, 30.0, (2, 0, 4))]
        assert plan(nodes, busy, [both], 0.0)[1].spec_id == 7

    def test_a_job_runs_once(self):
        both = job(1, spec(7, boards(1)), spec(8, boards(1)))
        assert len(admit([node(1)], [], [both], 0.0)) == 1


class TestRules:
    def test_node_names_pin(self):
        nodes = [node(1), node(2), node(3)]
        [admission] = admit(nodes, [], [job(1, node_names=frozenset({"n3"}))], 0.0)
        assert nodes_used(admission.placements) == [3]

    def test_pool_job_runs_in_its_pool_only(self):
        nodes = [node(1), node(2, pool=5)]
        pooled = job(1, pool=5, allowed_pools=frozenset({5}))
        assert nodes_used(admit(nodes, [], [pooled], 0.0)[0].placements) == [2]

    def test_shared_job_never_uses_a_pool(self):
        nodes = [node(1, pool=5), node(2)]
        assert nodes_used(admit(nodes, [], [job(1)], 0.0)[0].placements) == [2]

    def test_a_pool_the_project_may_not_use(self):
        reservation = plan([node(1, pool=5)], [], [job(1, pool=5)], 0.0)[1]
        assert reservation.start is None
        assert reservation.reason == NeverFits(NoAllowedNode("pool-not-allowed", 5))
        assert words(reservation.reason) == "can never start: its project may not use pool 5"

    def test_driver(self):
        nodes = [node(1, driver=1), node(2, driver=2)]
        assert nodes_used(admit(nodes, [], [job(1, driver=2)], 0.0)[0].placements) == [2]

    def test_model_and_slices(self):
        nodes = [node(1, model=V100), node(2, slices=2)]
        half = Demand(1000, GiB, slice_divisor=2, model=A100)
        assert nodes_used(admit(nodes, [], [job(1, spec(1, half))], 0.0)[0].placements) == [2]
        assert (
            admit(nodes, [], [job(1, spec(1, boards(1, model=V100)))], 0.0)[0].placements[0].node_id
            == 1
        )

    def test_work_with_no_known_end_is_never_planned_over(self):
        state = NodeState(1, "n1", 64_000, 512 * GiB, boards=8, model=A100)
        take(boards(6), state)  # a development environment
        reservation = plan([SchedNode(state)], [], [job(1, spec(1, boards(4)))], 0.0)[1]
        assert reservation.start is None
        assert reservation.reason == Shortfall("boards", 4, 2, "n1", model=A100)


class TestBackfill:
    """Job 1 needs the whole node at 50; smaller jobs behind it may use the gap before."""

    nodes = (node(1),)
    busy = (running(100, 50.0, (1, 0, 4)),)

    def reservations(self, *queued):
        big = job(1, spec(1, boards(8)), duration=100.0)
        return plan(self.nodes, self.busy, [big, *queued], 0.0)

    def test_a_short_job_starts_in_the_gap(self):
        reservations = self.reservations(job(2, spec(2, boards(4)), duration=50.0))
        assert reservations[2].start == 0.0
        assert reservations[1].start == 50.0

    def test_a_long_job_may_not_delay_the_reserved_one(self):
        reservations = self.reservations(job(2, spec(2, boards(4)), duration=51.0))
        assert reservations[1].start == 50.0
        assert reservations[2].start == 150.0
        assert reservations[2].reason == HeldForQueue()
        assert reservations[2].blockers == (1,)
        assert "reserved for jobs ahead" in words(reservations[2].reason)

    def test_higher_priority_is_not_backfill(self):
        urgent = job(2, spec(2, boards(4)), duration=500.0, priority=1)
        reservations = self.reservations(urgent)
        assert reservations[2].start == 0.0 and reservations[2].position == 1
        assert reservations[1].start == 500.0


class TestReasons:
    def test_shortfall_names_the_closest_node(self):
        nodes = [node(1), node(2)]
        busy = [running(100, 50.0, (1, 0, 6)), running(101, 60.0, (2, 0, 4))]
        reservation = plan(nodes, busy, [job(1, spec(1, boards(8)))], 0.0)[1]
        assert reservation.reason == Shortfall("boards", 8, 4, "n2", model=A100)
        assert words(reservation.reason) == (
            "needs 8 boards of model 1 on one node; the most free on any allowed node is 4 (n2)"
        )
        assert reservation.start == 50.0 and reservation.blockers == (100,)

    def test_cpu_shortfall(self):
        busy = [RunningJob(100, 10.0, (Placement(1, 60_000, GiB),))]
        reservation = plan([node(1)], busy, [job(1, spec(1, Demand(8000, GiB)))], 0.0)[1]
        assert words(reservation.reason) == (
            "needs 8 CPUs on one node; the most free on any allowed node is 4 CPUs (n1)"
        )

    def test_blockers_are_the_jobs_whose_end_frees_it(self):
        nodes = [node(1), node(2)]
        busy = [running(100, 40.0, (1, 0, 8)), running(101, 70.0, (2, 0, 8))]
        reservations = plan(nodes, busy, [job(1, spec(1, boards(8), nodes=2))], 0.0)
        assert (reservations[1].start, reservations[1].blockers) == (70.0, (101,))

    def test_a_reserved_job_can_block(self):
        nodes = [node(1)]
        queue = [job(1, spec(1, boards(8)), duration=30.0), job(2, spec(1, boards(8)))]
        reservations = plan(nodes, [running(100, 10.0, (1, 0, 1))], queue, 0.0)
        assert (reservations[2].start, reservations[2].blockers) == (40.0, (1,))


class TestCommitments:
    def test_a_pass_keeps_reservations_and_only_moves_them_earlier(self):
        nodes = [node(1), node(2)]
        busy = [running(100, 50.0, (1, 0, 8)), running(101, 80.0, (2, 0, 8))]
        queue = [job(1, spec(1, boards(8), nodes=2)), job(2, spec(1, boards(8)), duration=20.0)]
        first = plan(nodes, busy, queue, 0.0)
        assert (first[1].start, first[2].start) == (80.0, 50.0)
        # 101 ends early at 30: job 2 moves up into node 2, job 1 keeps its bound.
        second = plan(nodes, busy[:1], queue, 30.0, first)
        assert second[2].start == 30.0 and second[1].start <= 80.0

    def test_a_new_urgent_job_goes_ahead_of_commitments(self):
        nodes = [node(1)]
        busy = [running(100, 50.0, (1, 0, 8))]
        first = plan(nodes, busy, [job(1, spec(1, boards(8)))], 0.0)
        urgent = job(2, spec(1, boards(8)), priority=1)
        second = plan(nodes, busy, [job(1, spec(1, boards(8))), urgent], 10.0, first)
        assert (second[2].start, second[1].start) == (50.0, 150.0)

    def test_a_stale_commitment_is_planned_afresh(self):
        nodes = [node(1)]
        first = plan(nodes, [running(100, 50.0, (1, 0, 8))], [job(1, spec(1, boards(8)))], 0.0)
        # Someone extended job 100 (SPEC O6): the reservation no longer fits and is redone.
        later = plan(
            nodes, [running(100, 90.0, (1, 0, 8))], [job(1, spec(1, boards(8)))], 0.0, first
        )
        assert later[1].start == 90.0

    def test_a_kept_reservation_starts_when_something_ends(self):
        # Job 1 waits for 100 (n1) and 102 (n2) to end; 100 ends early. With no budget the
        # search gives up before finding 40; the kept reservation must not stay at 50, when
        # nothing ends any more and no pass would come: it moves to 102's end.
        nodes = [node(1), node(2)]
        busy = [running(100, 50.0, (1, 0, 4)), running(101, 15.0, (1, 4, 4))]
        busy.append(running(102, 40.0, (2, 0, 8)))
        queue = [
            job(1, spec(1, boards(8), nodes=2)),
            job(2, spec(1, boards(8)), node_names=frozenset({"n2"})),
        ]
        first = plan(nodes, busy, queue, 0.0)
        assert first[1].start == 50.0
        second = schedule(nodes, busy[1:], queue, 10.0, first, budget=0).reservations
        assert (second[1].start, second[1].blockers) == (40.0, (102,))


def test_an_overdue_job_still_holds_its_nodes():
    result = schedule([node(1)], [running(100, 5.0, (1, 0, 8))], [job(1)], 10.0, overdue=30.0)
    assert result.admissions == [] and result.reservations[1].start == 40.0


def test_admit_is_the_passs_admissions():
    nodes = [node(1), node(2)]
    queue = [job(1, spec(1, boards(8), nodes=2)), job(2), job(3, spec(1, boards(8)))]
    assert admit(nodes, [], queue, 0.0) == schedule(nodes, [], queue, 0.0).admissions


def test_a_pass_pauses_the_cyclic_collector_and_restores_it():
    import gc

    from jobs.scheduling.passes import without_gc

    seen = []
    pass_ = without_gc(lambda: seen.append(gc.isenabled()))
    assert gc.isenabled()
    pass_()
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        pass_()  # a caller that had it off keeps it off
        assert not gc.isenabled()
    finally:
        gc.enable()
