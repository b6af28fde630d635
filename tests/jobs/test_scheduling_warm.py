"""A pass started from the last pass's profile (jobs/scheduling/warm.py) plans exactly what a
pass booking everything afresh plans, whatever changed between the two.

The simulation in test_scheduling_property.py checks the same along whole runs of passes;
here each kind of change is drawn on its own, and the cases where the carried profile cannot
serve (other nodes, a job running where a kept reservation was) are shown to fall back.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.scheduling import RunningJob, rebook, schedule
from jobs.scheduling.warm import carried
from tests.jobs.test_scheduling_core import boards, job, node, running, spec
from tests.jobs.test_scheduling_property import scenarios
from tests.jobs.test_scheduling_settled import _change


def _admitted_run(result, queue, busy):
    """What the worker holds after a pass: the jobs it admitted running (to their planned
    end), the others still queued."""
    durations = {j.id: j.duration for j in queue}
    started = [RunningJob(a.job_id, result.now + durations[a.job_id], a.placements)
               for a in result.admissions]  # fmt: skip
    admitted = {a.job_id for a in result.admissions}
    return [*busy, *started], [j for j in queue if j.id not in admitted]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.data(), st.sampled_from((None, 2)))
def test_a_pass_from_the_last_profile_plans_what_a_fresh_one_plans(scenario, data, budget):
    nodes, busy, _, queue, _ = scenario
    options = {} if budget is None else {"budget": budget}
    first = schedule(nodes, busy, queue, 0.0, **options)
    if data.draw(st.booleans()):
        busy, queue = _admitted_run(first, queue, busy)
    nodes, busy, queue, now = _change(data.draw, nodes, busy, queue, first)
    committed = {j.id: first.reservations[j.id] for j in queue}
    digest = first.digest if data.draw(st.booleans()) else None
    fresh = schedule(nodes, busy, queue, now, committed, previous=digest, **options)
    warm = schedule(nodes, busy, queue, now, committed, previous=digest, warm=first.hand_over(),
                    **options)  # fmt: skip
    assert warm.reservations == fresh.reservations
    assert warm.admissions == fresh.admissions
    # Item for item: what the carried profile was left holding as it was (install's
    # ``in_place``) is what the fresh pass booked.
    assert [tl.items for tl in warm.timelines] == [tl.items for tl in fresh.timelines]
    # And the profile that pass leaves serves the one after it alike.
    later = now + data.draw(st.sampled_from((0.0, 0.5, 5.0)))
    third = schedule(nodes, busy, queue, later, warm.reservations, previous=warm.digest,
                     warm=warm.hand_over(), **options)  # fmt: skip
    again = schedule(nodes, busy, queue, later, fresh.reservations, previous=fresh.digest,
                     **options)  # fmt: skip
    assert third.reservations == again.reservations


def _installs(monkeypatch, in_place: list | None = None) -> list[bool]:
    """What each carried profile's install answered (True: it served the pass); the jobs
    it was told the profile holds as they are go to ``in_place``."""
    answers = []
    install = rebook.install

    def recorded(profile, holding, held, kept=frozenset()):
        if in_place is not None:
            in_place.append(set(kept))
        answers.append(install(profile, holding, held, kept))
        return answers[-1]

    monkeypatch.setattr(rebook, "install", recorded)
    return answers


def _busy_cluster():
    nodes = [node(i) for i in range(1, 4)]
    busy = [running(100 + i, 30.0 * i, (i, 0, 8)) for i in range(1, 4)]
    queue = [job(i, spec(1, boards(4), nodes=1 + i % 2), duration=20.0 + i) for i in range(1, 7)]
    return nodes, busy, queue


def test_the_carried_profile_serves_the_next_pass(monkeypatch):
    nodes, busy, queue = _busy_cluster()
    first = schedule(nodes, busy, queue, 0.0)
    answers = _installs(monkeypatch)
    then = schedule(nodes, busy[1:], queue, 10.0, first.reservations, previous=first.digest,
                    warm=first.hand_over())  # fmt: skip
    assert answers == [True]
    fresh = schedule(nodes, busy[1:], queue, 10.0, first.reservations, previous=first.digest)
    assert then.reservations == fresh.reservations
    # The jobs the first running one's end let start now start in both.
    assert then.admissions and then.admissions == fresh.admissions


def test_kept_reservations_still_to_start_are_left_in_the_profile_as_they_are(monkeypatch):
    """The next pass of a worker, nothing changed but the jobs it admitted now running: the
    settled reservations are not booked again, and the profile is the one a fresh pass
    makes, item for item."""
    nodes, busy, queue = _busy_cluster()
    first = schedule(nodes, busy, queue, 0.0)
    settled = set(first.digest.settled)
    assert settled, "the scenario keeps reservations settled"
    busy, queue = _admitted_run(first, queue, busy)
    in_place: list = []
    answers = _installs(monkeypatch, in_place)
    then = schedule(nodes, busy, queue, 0.0, first.reservations, previous=first.digest,
                    warm=first.hand_over())  # fmt: skip
    assert answers == [True] and in_place == [settled]
    fresh = schedule(nodes, busy, queue, 0.0, first.reservations, previous=first.digest)
    assert then.reservations == fresh.reservations
    assert [tl.items for tl in then.timelines] == [tl.items for tl in fresh.timelines]
    # A profile that holds other items than that pass left (here: another pass's, with a
    # job less running) is booked in full: nothing is taken as being in it.
    other = schedule(nodes, busy[1:], queue, 0.0, first.reservations)
    in_place.clear()
    schedule(nodes, busy, queue, 0.0, then.reservations, previous=then.digest,
             warm=other.hand_over())  # fmt: skip
    assert in_place == [set()]


def test_a_job_running_where_a_kept_reservation_was_books_afresh(monkeypatch):
    nodes, busy, queue = _busy_cluster()
    first = schedule(nodes, busy, queue, 0.0)
    kept = first.reservations[queue[0].id]
    assert kept.start is not None and kept.start > 0
    # The job running on that reservation's first node now runs far longer than planned
    # (its end moved later): the kept reservations no longer fit beside what runs.
    where = kept.placements[0].node_id
    busy = [running(j.id, 500.0, *((p.node_id, p.slots[0], len(p.slots)) for p in j.holdings))
            if j.holdings[0].node_id == where else j for j in busy]  # fmt: skip
    answers = _installs(monkeypatch)
    then = schedule(nodes, busy, queue, 1.0, first.reservations, previous=first.digest,
                    warm=first.hand_over())  # fmt: skip
    assert answers == [False]
    fresh = schedule(nodes, busy, queue, 1.0, first.reservations, previous=first.digest)
    assert then.reservations == fresh.reservations
    moved = then.reservations[queue[0].id]
    assert (moved.start, moved.placements) != (kept.start, kept.placements)


def test_a_profile_of_other_nodes_or_a_later_moment_is_not_carried():
    nodes, busy, queue = _busy_cluster()
    first = schedule(nodes, busy, queue, 5.0)
    profile = first.hand_over()
    other = schedule([*nodes, node(9)], busy, queue, 5.0).infos
    assert carried(profile, other, 5.0) is None
    moved = schedule([node(1, pool=1), *nodes[1:]], busy, queue, 5.0).infos
    assert carried(profile, moved, 5.0) is None
    assert carried(profile, first.infos, 4.0) is None  # a pass never plans from the past
    assert carried(profile, first.infos, 6.0) is profile
    # Brought to the later moment: nothing starts before it.
    assert all(tl.times[0] == 6.0 for tl in profile.timelines)
    assert all(item.start >= 6.0 for tl in profile.timelines for item in tl.items.values())


def test_a_schedule_that_handed_its_profile_over_has_none():
    nodes, busy, queue = _busy_cluster()
    first = schedule(nodes, busy, queue, 0.0)
    reservations = dict(first.reservations)
    first.hand_over()
    assert first.profile is None and first.timelines is None
    assert first.reservations == reservations  # what it planned stays
