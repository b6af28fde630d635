"""Queue prediction for the form (SPEC J24, Q5) and refusing drafts that can never start."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.scheduling import (
    NeverFits,
    NoAllowedNode,
    NotYetPlanned,
    RunningJob,
    Shortfall,
    Suggestion,
    TooFewNodes,
    forecast,
    never_fits,
    predict,
    replay,
    schedule,
    words,
)
from resources.placement.capacity import Demand
from tests.jobs.test_scheduling_core import A100, V100, boards, job, node, running, spec

DRAFT = 0


def draft(*alternatives, now: float = 10.0, **fields):
    return job(DRAFT, *alternatives, submitted_at=now, **fields)


class TestPredict:
    nodes = (node(1), node(2))
    busy = (running(100, 50.0, (1, 0, 8)), running(101, 70.0, (2, 0, 4)))
    queue = (job(1, spec(1, boards(8)), duration=100.0),)

    def test_starts_now(self):
        prediction = predict(self.nodes, self.busy, self.queue, draft(spec(5, boards(2))), 10.0)
        assert prediction.starts_now and prediction.spec_id == 5
        assert prediction.latest_start == 10.0 and prediction.reason is None
        assert (prediction.position, prediction.queue_length) == (2, 2)

    def test_waits_behind_the_queue_with_reason_and_blockers(self):
        prediction = predict(self.nodes, self.busy, self.queue, draft(spec(5, boards(8))), 10.0)
        assert not prediction.starts_now
        # Job 1 has node 1 from 50 to 150; node 2 frees at 70.
        assert prediction.latest_start == 70.0 and prediction.blockers == (101,)
        assert prediction.reason == Shortfall("boards", 8, 4, "n2", model=A100)

    def test_an_urgent_draft_goes_ahead(self):
        urgent = draft(spec(5, boards(8), nodes=2), priority=1)
        prediction = predict(self.nodes, self.busy, self.queue, urgent, 10.0)
        assert (prediction.position, prediction.latest_start) == (1, 70.0)

    def test_several_specs_start_now_if_any_does(self):
        both = draft(spec(5, boards(8)), spec(6, boards(4)))
        prediction = predict(self.nodes, self.busy, self.queue, both, 10.0)
        assert prediction.starts_now and prediction.spec_id == 6

    def test_suggestions(self):
        nodes = (*self.nodes, node(3, pool=9), node(4, pool=9))
        wide = draft(spec(5, boards(4), nodes=2), allowed_pools=frozenset({9}))
        prediction = predict(nodes, self.busy, (), wide, 10.0, other_specs=[spec(6, boards(2))])
        assert not prediction.starts_now
        assert prediction.reason == TooFewNodes(need=2, fit=1)
        assert prediction.suggestions == (
            Suggestion("nodes", 1),
            Suggestion("elastic", 1),
            Suggestion("spec", 6),
            Suggestion("pool", 9),
        )
        two = draft(spec(5, boards(6), nodes=1))
        prediction = predict(self.nodes, self.busy, (), two, 10.0, other_specs=[spec(6, boards(4))])
        assert Suggestion("spec", 6) in prediction.suggestions

    def test_uses_a_given_pass_and_leaves_it_alone(self):
        result = schedule(self.nodes, self.busy, self.queue, 10.0)
        before = [list(tl.times) for tl in result.timelines], dict(result.reservations)
        fresh = predict(self.nodes, self.busy, self.queue, draft(spec(5, boards(8))), 10.0)
        for wanted in (draft(spec(5, boards(8))), draft(spec(5, boards(4)), priority=2)):
            predict((), (), (), wanted, 10.0, schedule=result)
        cached = predict((), (), (), draft(spec(5, boards(8))), 10.0, schedule=result)
        assert fresh == cached
        assert ([list(tl.times) for tl in result.timelines], result.reservations) == before

    def test_from_a_replayed_pass(self):
        # Between passes the web layer rebuilds the plan from stored reservations.
        result = schedule(self.nodes, self.busy, self.queue, 10.0)
        newcomer = job(2, spec(1, boards(4)), submitted_at=5.0)
        again = replay(self.nodes, self.busy, [*self.queue, newcomer], 10.0, result.reservations)
        kept, before = again.reservations[1], result.reservations[1]
        assert (kept.start, kept.placements) == (before.start, before.placements)
        assert again.reservations[2].start == 10.0  # searched for: it was not planned yet
        for wanted in (draft(spec(5, boards(8))), draft(spec(5, boards(8)), priority=1)):
            assert forecast(again, wanted) == forecast(
                schedule(self.nodes, self.busy, [*self.queue, newcomer], 10.0), wanted
            )

    def test_a_draft_that_can_never_start(self):
        prediction = predict(self.nodes, (), (), draft(spec(5, boards(16))), 10.0)
        assert prediction.latest_start is None and isinstance(prediction.reason, NeverFits)


@st.composite
def queues(draw):
    nodes = [
        node(i, draw(st.integers(0, 8)), model=draw(st.sampled_from((A100, V100))))
        for i in range(1, 5)
    ]
    busy = []
    for job_id in range(100, 100 + draw(st.integers(0, 3))):
        n = draw(st.sampled_from(nodes))
        count = draw(st.integers(0, n.state.boards))
        if count:
            demand = boards(count, model=n.state.model)
            busy.append(RunningJob(job_id, float(draw(st.integers(1, 50))), (
                (n.id, demand.cpu, demand.memory, tuple(range(count))),
            )))  # fmt: skip
    # Two teams' fair-share standings (SPEC G3; 0: fair share off).
    fair = {1: draw(st.sampled_from((0.0, 0.5, 1.0, 2.0))), 2: draw(st.sampled_from((0.0, 1.5)))}
    queue = []
    for job_id in range(1, draw(st.integers(1, 8)) + 1):
        demand = boards(draw(st.integers(1, 4)), model=draw(st.sampled_from((A100, V100))))
        team = draw(st.sampled_from((1, 2)))
        queue.append(
            replace(
                job(
                    job_id,
                    spec(job_id, demand, nodes=draw(st.integers(1, 3))),
                    duration=float(draw(st.integers(1, 40))),
                    priority=draw(st.integers(0, 1)),
                ),
                project=team,
                fair=fair[team],
            )
        )
    demand = boards(draw(st.integers(1, 4)), model=draw(st.sampled_from((A100, V100))))
    team = draw(st.sampled_from((1, 2)))
    wanted = draft(
        spec(99, demand, nodes=draw(st.integers(1, 3))), priority=draw(st.integers(0, 1))
    )
    return nodes, busy, queue, replace(wanted, project=team, fair=fair[team]), fair


@settings(max_examples=200, deadline=None)
@given(queues(), st.sampled_from((None, 1, 2, 3)))
def test_prediction_is_what_the_next_pass_plans(case, fresh):
    """Q5: the prediction is the admission model's answer for the draft once submitted
    (the pass's admissions running by then), fair share too: a draft of a team below its
    share comes ahead of others' jobs of its class, and is planned beside their promises.
    With the queue planned a part a pass (``fresh``), a draft behind jobs not planned yet
    is told so; any other gets what the next pass plans."""
    nodes, busy, queue, wanted, fair = case
    result = schedule(nodes, busy, queue, 10.0, fresh=fresh)
    result.fair = fair
    prediction = predict(nodes, busy, queue, wanted, 10.0, schedule=result)
    if isinstance(prediction.reason, NotYetPlanned):
        assert result.unplanned and prediction.latest_start is None
        return
    admitted = {a.job_id: a for a in result.admissions}
    now_running = busy + [
        RunningJob(
            a.job_id, 10.0 + next(j.duration for j in queue if j.id == a.job_id), a.placements
        )
        for a in admitted.values()
    ]
    waiting = [j for j in queue if j.id not in admitted]
    planned = schedule(nodes, now_running, [*waiting, wanted], 10.0, result.reservations,
                       fresh=fresh).reservations[DRAFT]  # fmt: skip
    assert prediction.latest_start == planned.start
    assert prediction.spec_id == planned.spec_id
    assert prediction.starts_now == (planned.start == 10.0)


def test_a_draft_of_a_team_below_its_share_is_planned_beside_the_promises_of_its_class():
    """SPEC G3 with the latest start a bound: the draft's team is below its share, so it
    comes first among the jobs of its priority, but A was promised the node at 20 and keeps
    it; the draft is planned after A (at 30), and the next pass says the same."""
    nodes, busy = [node(1)], [running(100, 20.0, (1, 0, 8))]
    a = replace(job(1, spec(1, boards(8)), duration=10.0), project=2, fair=1.5)
    result = schedule(nodes, busy, [a], 10.0)
    assert result.reservations[1].start == 20.0
    result.fair = {1: 0.0, 2: 1.5}
    wanted = replace(draft(spec(99, boards(8)), duration=10.0), project=1)
    prediction = predict(nodes, busy, [a], wanted, 10.0, schedule=result)
    assert (prediction.position, prediction.latest_start) == (1, 30.0)
    after = schedule(nodes, busy, [a, replace(wanted, fair=0.0)], 10.0, result.reservations)
    assert after.reservations[1].start == 20.0 and after.reservations[DRAFT].start == 30.0
    assert after.deferred == {DRAFT}


class TestNeverFits:
    nodes = (
        node(1),
        node(2, model=V100, driver=3),
        node(3, slices=2, pool=5),
        node(4, boards=0, cpu=16_000),
    )

    def reason(self, *alternatives, **fields):
        return never_fits(self.nodes, draft(*alternatives, **fields))

    def test_fits_somewhere(self):
        assert self.reason(spec(1, boards(8), nodes=2), spec(2, boards(1))) is None
        assert self.reason(spec(1, boards(4), nodes=2)) is None  # both on n1

    def test_more_boards_per_node_than_any_has(self):
        reason = self.reason(spec(1, boards(16)))
        assert reason == NeverFits(Shortfall("boards", 16, 8, "n1", model=A100))
        assert words(reason) == (
            "can never start: needs 16 boards of model 1 on one node; "
            "the most any allowed node has 8 (n1)"
        )

    def test_more_nodes_than_there_are(self):
        # n3 holds A100 boards too, but in a pool.
        reason = self.reason(spec(1, boards(8), nodes=2))
        assert reason == NeverFits(TooFewNodes(need=2, fit=1))

    def test_pool_rules(self):
        assert self.reason(pool=5) == NeverFits(NoAllowedNode("pool-not-allowed", 5))
        assert self.reason(pool=6, allowed_pools=frozenset({6})) == NeverFits(
            NoAllowedNode("empty-pool", 6)
        )
        half = Demand(1000, 1024, slice_divisor=2, model=A100)
        assert self.reason(spec(1, half), pool=5, allowed_pools=frozenset({5})) is None

    def test_pinned_names(self):
        missing = self.reason(node_names=frozenset({"n9", "n1"}))
        assert missing == NeverFits(NoAllowedNode("unknown-names", ("n9",)))
        assert words(missing) == "can never start: no node is named n9"
        too_small = self.reason(spec(1, Demand(32_000, 1024)), node_names=frozenset({"n4"}))
        assert too_small == NeverFits(Shortfall("cpu", 32_000, 16_000, "n4"))
        # A pinned node brings its pool: allowed when the project may use it (the form
        # offers it), refused with that reason when not.
        barred = self.reason(node_names=frozenset({"n3"}))
        assert barred == NeverFits(NoAllowedNode("pool-not-allowed", 5))
        half = Demand(1000, 1024, slice_divisor=2, model=A100)
        pinned = {"node_names": frozenset({"n3"}), "allowed_pools": frozenset({5})}
        assert self.reason(spec(1, half), **pinned) is None
        both = frozenset({5, 6})
        elsewhere = self.reason(node_names=frozenset({"n3"}), pool=6, allowed_pools=both)
        assert elsewhere == NeverFits(NoAllowedNode("names-elsewhere", ("n3",)))

    def test_driver_model_and_slices(self):
        assert self.reason(driver=7) == NeverFits(NoAllowedNode("driver", 7))
        assert self.reason(spec(1, boards(1, model=V100)), driver=3) is None
        assert self.reason(spec(1, boards(1, model=3))) == NeverFits(NoAllowedNode("model", 3))
        quarter = Demand(1000, 1024, slice_divisor=4, model=A100)
        assert self.reason(spec(1, quarter)) == NeverFits(NoAllowedNode("slices", 4))

    def test_ignores_what_is_in_use(self):
        assert never_fits(self.nodes, draft(spec(1, boards(8)))) is None


@pytest.mark.parametrize(
    ("reason", "text"),
    [
        (None, "starts now"),
        (Shortfall("memory", 2048, 1024, "n1"), (
            "needs 2 GiB of memory on one node; the most free on any allowed node is 1 GiB of "
            "memory (n1)"
        )),
        (Shortfall("boards", 1, 0, None, model=1, slices=2),
         "needs a 1/2 slice of a model 1 board; no allowed node has one free"),
        (NoAllowedNode("empty-pool", None), "there is no schedulable shared node"),
        (NeverFits(NoAllowedNode("driver", 4)),
         "can never start: no allowed node has driver version 4"),
        (NotYetPlanned(), "not planned yet: the queue ahead of it is still being planned"),
    ],
)  # fmt: skip
def test_words(reason, text):
    assert words(reason) == text


def test_words_refuses_what_is_not_a_reason():
    with pytest.raises(TypeError):
        words("busy")  # type: ignore[arg-type]


def test_replacing_a_pool_keeps_other_fields():
    # Suggestions are computed on variants of the draft; they must not lose its rules.
    base = draft(spec(1, boards(1)), driver=2, allowed_pools=frozenset({5}))
    assert replace(base, pool=5).driver == 2


@st.composite
def inventories(draw):
    """Nodes of a few kinds and a draft of one or two specs."""
    kinds = [
        {
            "boards": draw(st.integers(0, 8)),
            "model": draw(st.sampled_from((A100, V100))),
            "slices": draw(st.sampled_from((1, 2))),
            "cpu": draw(st.sampled_from((16_000, 64_000))),
        }
        for _ in range(draw(st.integers(1, 3)))
    ]
    nodes = [node(i, **draw(st.sampled_from(kinds))) for i in range(1, draw(st.integers(2, 9)))]
    demands = st.one_of(
        st.builds(boards, st.integers(1, 8), st.sampled_from((A100, V100))),  # whole boards
        st.builds(lambda model: replace(boards(1, model), slice_divisor=2),
                  st.sampled_from((A100, V100))),  # a half board
        st.just(boards(0, model=None)),  # CPU only
    )  # fmt: skip
    alternatives = [
        spec(k, draw(demands), nodes=draw(st.integers(1, 12)))
        for k in range(1, draw(st.integers(1, 2)) + 1)
    ]
    return nodes, draft(*alternatives)


@settings(max_examples=300, deadline=None)
@given(inventories())
def test_never_fits_answers_as_every_idle_node_would(case):
    from resources.placement import answer
    from resources.placement.capacity import fit_count

    nodes, wanted = case
    reason = never_fits(nodes, wanted)
    states = [answer.idle(n.state) for n in nodes]
    every_node = [
        sum(fit_count(a.demand, state) for state in states) >= a.min_nodes
        for a in wanted.alternatives
    ]
    assert (reason is None) == any(every_node)
    if reason is not None:
        first = wanted.alternatives[0]
        assert reason.cause == answer.why_not(states, first.demand, first.min_nodes)


@settings(max_examples=150, deadline=None)
@given(queues())
def test_a_suggestions_count_is_every_nodes_count_in_its_own_profile(case):
    """The form's "fewer nodes" suggestion, kept on the plan once counted: every node's room
    now, in the profile asked about."""
    from jobs.scheduling.predict import _fit_now, ahead

    nodes, busy, queue, wanted, _fair = case
    result = schedule(nodes, busy, queue, 10.0)
    profile = ahead(result, len(result.order) + 1)
    alternative = wanted.alternatives[0]
    indices, _ = result.capable(wanted, alternative)
    each = sum(
        profile.timelines[i].count(alternative.demand, wanted.duration, 10.0)[0] for i in indices
    )
    assert _fit_now(result, wanted, alternative, profile) == each
    assert _fit_now(result, wanted, alternative, profile) == each  # kept
    empty = ahead(result, 1)  # the profile of a draft ahead of every queued job
    alone = sum(
        empty.timelines[i].count(alternative.demand, wanted.duration, 10.0)[0] for i in indices
    )
    assert _fit_now(result, wanted, alternative, empty) == alone
