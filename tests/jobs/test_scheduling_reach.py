"""The reach check of a kept reservation (jobs/scheduling/settled.py, Tracker._reached):
which room given back a job looks at, in which order, and its answer, against a plain walk
of every entry of the log; and the counts and births it skips entries by
(jobs/scheduling/reach_counts.py)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.scheduling import schedule
from tests.jobs.test_scheduling_property import scenarios


def _reached_plainly(tracker, job, booking, since: int, searched: int) -> bool:
    """Tracker._reached as its docstring says, every entry of the log from ``since`` on
    taken before ``searched`` looked at in turn: the answer its blocks must give."""
    from jobs.scheduling.profile import demand_key
    from jobs.scheduling.settled import REACH_LIMIT

    log = tracker.log
    if since >= len(log):
        return False
    log = log[:since] + [entry for entry in log[since:] if entry[3] < searched]
    start, duration = booking.start, job.duration
    reach, looked = start + duration, 0
    for index, _ in booking.replicas:
        for on, back, _until, _born in log[since:]:
            if on == index:
                looked += 1
                if back < reach or looked > REACH_LIMIT:
                    return True
    now, timelines = tracker.schedule.now, tracker.schedule.timelines
    within = [entry for entry in log[since:] if entry[1] < reach]
    groups = list(tracker._groups(job))
    # From the start of the log, more entries to look at than REACH_LIMIT: it may, unlooked.
    if (
        since == 0
        and looked + sum(sum(1 for entry in within if entry[0] in nodes) for _, nodes in groups)
        > REACH_LIMIT
    ):
        return True
    for group, nodes in groups:
        demand, key = group[1], demand_key(group[1])
        for index, back, until, _ in (entry for entry in within if entry[0] in nodes):
            looked += 1
            if looked > REACH_LIMIT:
                return True
            runs = timelines[index].runs_over(demand, key, back, until)
            if any(max(a, now) < start and b - max(a, now) >= duration for a, b in runs):
                return True
    return False


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.data(), st.sampled_from((2, 3, 64)))
def test_blocks_of_the_log_answer_as_every_entry_would(scenario, data, block):
    # The log's entries are passed over a block at a time where the whole block is out of a
    # job's reach: against a pass's real timelines, with room given back drawn (in parts,
    # as a pass logs it between its questions), the same entries are looked into as when
    # each entry is looked at in turn, and the answer is the same, REACH_LIMIT included.
    from math import inf
    from unittest import mock

    from jobs.scheduling import settled

    nodes, busy, _, queue, _ = scenario
    plan = schedule(nodes, busy, queue, 0.0)
    booked = [(j, plan.bookings[j.id]) for j in queue if plan.bookings[j.id].start is not None]
    if not booked:
        return
    # Asked of a profile with more room than the plan had (some running jobs gone, nothing
    # booked): runs of room that start before a booking, so that some entries reach it.
    ended = data.draw(st.sets(st.sampled_from([j.id for j in busy]))) if busy else set()
    later = schedule(nodes, [j for j in busy if j.id not in ended], [], 0.0)
    tracker = settled.Tracker(later, None)
    timeline = type(later.timelines[0])
    runs_over, asked = timeline.runs_over, []

    def recorded(self, demand, key, lo, hi):
        asked.append((id(self), lo, hi))
        return runs_over(self, demand, key, lo, hi)

    # A lower limit too, so that the log often holds more than it within a job's reach.
    limit = data.draw(st.sampled_from((8, 40, settled.REACH_LIMIT)))
    with mock.patch.object(settled, "BLOCK", block), \
         mock.patch.object(settled, "REACH_LIMIT", limit), \
         mock.patch.object(timeline, "runs_over", recorded):  # fmt: skip
        for _ in range(data.draw(st.integers(1, 4))):
            # Mostly on nodes the asked job does not hold: room there is for its specs' runs
            # to reach (room on its own nodes within reach answers at once).
            job, booking = data.draw(st.sampled_from(booked))
            held = {index for index, _ in booking.replicas}
            others = [i for i in range(len(later.timelines)) if i not in held]
            on = st.sampled_from(others) if others and data.draw(st.booleans()) else \
                st.integers(0, len(later.timelines) - 1)  # fmt: skip
            # Each taken at a clock (born), mostly after the job's search where they are
            # many, as after an urgent submit.
            entry = st.tuples(
                on, st.floats(0.0, 120.0), st.one_of(st.floats(0.5, 60.0), st.just(inf)),
                st.integers(0, 40),
            ).map(lambda e: (e[0], e[1], e[1] + e[2], e[3]))  # fmt: skip
            tracker.log.extend(data.draw(st.lists(entry, max_size=150)))
            since = data.draw(st.one_of(st.just(0), st.integers(0, len(tracker.log))))
            searched = data.draw(st.integers(1, 41))
            # The same entries looked into, in the same order, and the same answer.
            answer = tracker._reached(job, booking, since, searched)
            looked = asked[:]
            asked.clear()
            assert answer == _reached_plainly(tracker, job, booking, since, searched)
            assert looked == asked
            asked.clear()


@given(st.lists(st.tuples(st.lists(st.floats(0, 100), max_size=90), st.floats(-1, 101))))
def test_starts_count_those_before_a_moment_whatever_came_in_between(steps):
    # What Tracker._reached counts against REACH_LIMIT: added in batches (tens of thousands
    # at once, then a few), asked in between.
    from jobs.scheduling.reach_counts import Starts

    starts, every = Starts(), []
    for added, moment in steps:
        for start in added:
            starts.add(start)
        every += added
        assert starts.before(moment) == sum(1 for start in every if start < moment)


@given(st.randoms(use_true_random=False), st.integers(0, 300), st.floats(0, 101))
def test_the_entries_within_reach_come_in_log_order_whichever_way_found(rng, length, reach):
    # Tracker._within finds a job's entries from those taken before its search where they
    # are few, else block by block: the same entries, in the log's order, either way (an
    # urgent submit gives back tens of thousands taken at every clock).
    from jobs.scheduling.settled import Tracker

    tracker = Tracker.__new__(Tracker)
    tracker.log = [(rng.randint(0, 3), start := rng.uniform(0, 100), start + 1,
                    rng.randint(0, 60)) for _ in range(length)]  # fmt: skip
    tracker._live, tracker._nodes = {}, 4
    _, entries, blocks, _, aged = tracker._entries(("rules", "demand"), frozenset({0, 1, 2}))
    assert [e[1:] for e in entries] == [e for e in tracker.log if e[0] != 3]
    # Every node: the whole log, and the same lists for any group of those nodes.
    everywhere = frozenset(range(4))
    assert [e[1:] for e in tracker._entries(("rules", "one"), everywhere)[1]] == tracker.log
    assert tracker._entries(("rules", "two"), everywhere)[1] is tracker._live[everywhere][1]
    for since, born in [(0, 1), (0, 5), (length // 3, 5), (0, 40), (length // 2, 61)]:
        found = list(Tracker._within(entries, blocks, aged, since, born, reach))
        assert found == [e for e in entries if e[0] >= since and e[2] < reach and e[4] < born]
