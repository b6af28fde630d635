"""Fair share (SPEC G3): the rule's pieces, then a day of three teams with weights 1:1:2 on
a fixed cluster, every team always wanting more than it gets: each ends with its share of
board-hours within 10% of what its weight owes it. The same day in submit order alone
(fair share off) is no fair at all: the team that submits fastest takes the most."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.scheduling import Alternative, QueuedJob, RunningJob, SchedNode, schedule
from jobs.scheduling.fairness import GRACE, decayed, rank, standing, use
from resources.placement.capacity import Demand, NodeState

DAY, HOUR, WEEK = 86400.0, 3600.0, 7 * 86400.0


def test_use_decays_by_half_each_half_life():
    assert decayed(2, 0, 10, 10, 1e12) == pytest.approx(20, rel=1e-4)  # no decay to speak of
    recent = decayed(1, WEEK - HOUR, WEEK, WEEK, WEEK)
    old = decayed(1, -HOUR, 0, WEEK, WEEK)  # the same hour, a half-life earlier
    assert old == pytest.approx(recent / 2, rel=1e-3)
    assert decayed(1, 10, 5, 20, WEEK) == 0 and decayed(0, 0, 10, 10, WEEK) == 0
    # Still held: counted up to now.
    assert use([(7, 1, 0, None)], 100, 1e12) == {7: pytest.approx(100, rel=1e-4)}


def test_a_team_below_its_share_stands_lower_than_one_above():
    used = {1: 100.0, 2: 100.0, 3: 100.0}
    found = standing(used, {3: 2})
    assert found[3] < 1 < found[1] == found[2]  # team 3 is owed half: it used a third
    assert standing({}, {1: 1}) == {1: 0.0}
    assert rank({1: 0.123456, 2: 0.0}) == {1: 0.12, 2: 0.0}


@given(st.dictionaries(st.integers(1, 6), st.floats(0, 1e6), min_size=1),
       st.dictionaries(st.integers(1, 6), st.integers(1, 10)))  # fmt: skip
def test_standings_weigh_use_by_share(used, weights):
    """Whatever the use: a team's standing is its fraction of the use over its fraction of
    the weight, so the weighted standings of all teams average to one."""
    found = standing(used, weights)
    if sum(used.values()) <= 0:
        assert set(found.values()) == {0.0}
        return
    total = sum(weights.get(p, 1) for p in found)
    assert sum(found[p] * weights.get(p, 1) / total for p in found) == pytest.approx(1)


NODES = [SchedNode(NodeState(i, f"n{i}", 64000, 262144, 4, 1, 1)) for i in range(1, 5)]
WEIGHTS = {1: 1, 2: 1, 3: 2}


def a_day(fair: bool, seed: int = 5) -> dict[int, float]:
    """Board-hours per team after a day of passes every 10 minutes: each team keeps six
    jobs queued (team 1 submits twice as many small ones), 1-4 boards for 30-120 minutes."""
    rng = random.Random(seed)
    queue: list[QueuedJob] = []
    running: dict[int, tuple[RunningJob, int, int, float]] = {}  # id -> (job, team, boards, start)
    history: list[tuple[int, float, float, float | None]] = []
    hours = dict.fromkeys(WEIGHTS, 0.0)
    next_id, now = 1, 0.0
    while now < DAY:
        for job_id, (job, team, boards, start) in list(running.items()):
            if job.ends_at <= now:
                del running[job_id]
                history.append((team, boards, start, job.ends_at))
                hours[team] += boards * (job.ends_at - start) / HOUR
        for team in WEIGHTS:
            want = 12 if team == 1 else 6
            while sum(1 for q in queue if q.project == team) < want:
                boards = rng.choice([1, 2, 4] if team != 1 else [1, 1, 2])
                minutes = rng.choice([30, 60, 90, 120])
                demand = Demand(1000, 1024, boards=boards, model=1)
                queue.append(QueuedJob(next_id, (Alternative(next_id, demand, 1),),
                                       minutes * 60.0, submitted_at=now + next_id * 1e-3,
                                       project=team))  # fmt: skip
                next_id += 1
        standings = {}
        if fair:
            live = [(t, b, s, None) for _j, t, b, s in running.values()]
            standings = rank(standing(use(history + live, now, WEEK), WEIGHTS, GRACE))
        ordered = [QueuedJob(**{**_fields(q), "fair": standings.get(q.project, 0.0)})
                   for q in queue]  # fmt: skip
        plan = schedule(NODES, [r[0] for r in running.values()], ordered, now)
        started = {a.job_id: a for a in plan.admissions}
        for q in [q for q in queue if q.id in started]:
            boards = q.alternatives[0].demand.boards
            holding = RunningJob(q.id, now + q.duration, started[q.id].placements)
            running[q.id] = (holding, q.project, boards, now)
        queue = [q for q in queue if q.id not in started]
        now += 600.0
    for _job, team, boards, start in running.values():
        hours[team] += boards * (now - start) / HOUR
    return hours


def _fields(job: QueuedJob) -> dict:
    return {name: getattr(job, name) for name in job.__dataclass_fields__}


def test_a_day_of_three_teams_ends_within_ten_percent_of_their_shares():
    hours = a_day(fair=True)
    total = sum(hours.values())
    owed = {team: weight / sum(WEIGHTS.values()) for team, weight in WEIGHTS.items()}
    shares = {team: hours[team] / total for team in hours}
    for team in WEIGHTS:
        assert math.isclose(shares[team], owed[team], rel_tol=0.10), (shares, owed)
    # Submit order alone gives the team that asks most far more than its share.
    unfair = a_day(fair=False)
    assert unfair[1] / sum(unfair.values()) > owed[1] * 1.5, unfair


@pytest.mark.django_db(transaction=True)
def test_a_pass_puts_the_team_below_its_share_first(client, alice, charlie, vision, speech, admin):
    """Through the database: vision used boards all morning, speech none; speech's job
    submitted after vision's comes first in its priority, on /queue/ too. With fair share
    off (half-life 0), submit order again."""
    from datetime import timedelta
    from decimal import Decimal

    from django.utils import timezone

    from console import limits
    from jobs.admission.db import run_pass
    from jobs.admission.fairness import standings, weights
    from jobs.models import Job
    from resources.models import Allocation, Quota
    from tests.jobs.factories import JobFactory
    from tests.resources.factories import AcceleratorModelFactory, NodeFactory, NodeSpecFactory

    model = AcceleratorModelFactory(name="Demo-GPU")
    node = NodeFactory(name="node-a", board_count=1, accelerator_model=model)
    gpu = NodeSpecFactory(name="gpu-1", boards=Decimal(1), accelerator_model=model)
    now = timezone.now()
    Allocation.objects.create(
        node=node, holder_id=0, label="past", cpu_millicores=1, memory_mib=1, slots=[0],
        project=vision, owner=alice, boards=Decimal(1), released_at=now - timedelta(hours=1),
    )  # fmt: skip
    Allocation.objects.filter(label="past").update(created_at=now - timedelta(hours=5))
    held = JobFactory(owner=alice, project=vision, name="holds-the-board", specs=[gpu])
    run_pass()  # takes the only board
    assert Job.objects.get(pk=held.pk).phase == "admitted"
    first = JobFactory(owner=alice, project=vision, name="vision-next", specs=[gpu])
    JobFactory(owner=charlie, project=speech, name="speech-next", specs=[gpu],
               submitted_at=first.submitted_at + timedelta(seconds=1))  # fmt: skip
    found = standings(timezone.now())
    assert found[vision.pk] > 0 and found.get(speech.pk, 0.0) == 0.0
    Quota.objects.create(project=speech, accelerator_model=model, guaranteed=0, weight=3)
    assert weights() == {speech.pk: 3.0}  # vision has no quota: weight 1
    run_pass()
    positions = dict(Job.objects.filter(phase="queued").values_list("name", "standing__position"))
    assert positions == {"speech-next": 1, "vision-next": 2}
    client.force_login(admin)  # every project's jobs
    page = client.get("/queue/").content.decode()
    assert page.index("speech-next") < page.index("vision-next")
    limits.save({"fair_share_half_life_days": 0}, admin)
    run_pass()
    positions = dict(Job.objects.filter(phase="queued").values_list("name", "standing__position"))
    assert positions == {"vision-next": 1, "speech-next": 2}


@given(used=st.dictionaries(st.integers(1, 5), st.floats(0, 15), min_size=2))
def test_a_few_seconds_of_use_never_reorder_teams_of_equal_weight(used):
    """With the grace the console counts (a board-hour each), teams of one weight whose use
    differs by seconds stand alike once ranked: 15 s against an hour's grace keeps each
    within half a percent of 1.0, inside the rounding step, so such noise never reorders
    the queue."""
    equal = dict.fromkeys(used, 1)
    ranked = rank(standing(used, equal, GRACE))
    assert len(set(ranked.values())) == 1, ranked
    # And the grace keeps the order of real differences.
    big = {**used, min(used): max(used.values()) + 10 * GRACE}
    ranked = standing(big, equal, GRACE)
    assert ranked[min(used)] == max(ranked.values())
