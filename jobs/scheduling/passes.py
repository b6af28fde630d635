"""One scheduling pass over a queue (core.py says how it keeps its promises): :func:`schedule`,
the admissions it makes now (:func:`admit`), every queued job's reservation (:func:`plan`),
and :func:`replay`, the last pass rebuilt cheaply for predictions between passes."""

from __future__ import annotations

import functools
import gc
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from jobs.scheduling.core import BUDGET, COMPRESSIONS, OVERDUE, Schedule, order
from jobs.scheduling.data import (
    Admission,
    QueuedJob,
    Reservation,
    RunningJob,
    SchedNode,
)
from jobs.scheduling.profile import Profile
from jobs.scheduling.quotas import Cap, gate
from jobs.scheduling.settled import Digest


def without_gc(function):
    """A pass makes and drops hundreds of thousands of small tuples, none of them in a
    cycle: the cyclic collector finds nothing, but in a worker or web process it walks the
    whole heap (Django, the ORM's objects) many times per pass, about a third of the pass's
    time. Reference counting still frees everything as it goes."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return wrapper


@without_gc
def schedule(
    nodes: Sequence[SchedNode],
    running: Iterable[RunningJob],
    queue: Iterable[QueuedJob],
    now: float,
    committed: Mapping[int, Reservation] | None = None,
    *,
    overdue: float = OVERDUE,
    budget: int = BUDGET,
    previous: Digest | None = None,
    compressions: float = COMPRESSIONS,
    caps: Sequence[Cap] = (),
    used: Mapping[int, int] | None = None,
    rejoining: frozenset[int] = frozenset(),
    warm: Profile | None = None,
    fresh: float | None = None,
) -> Schedule:
    """One admission pass: reservations for every queued job and the admissions now.

    Pass ``committed``, the previous pass's reservations, to keep their starts as promises,
    and ``previous``, an earlier pass's ``digest``, to spare the searches that would keep
    them as they are (the plan is the same with or without it, given compressions enough
    for every search it makes: ``compressions`` bounds the kept reservations searched
    again, see core.COMPRESSIONS). ``caps``: the quota maximums (SPEC G1) with the boards
    their projects hold now (``used``, by cap id, in eighths): jobs over one are held
    (jobs.scheduling.quotas), and only the others are planned; of those, the ones held in
    the last pass (``rejoining``) join the queue now, behind the promises made meanwhile.
    ``warm``: an earlier pass's profile (``Schedule.hand_over``) to start from instead of
    booking everything afresh; the plan is the same (jobs.scheduling.warm). ``fresh``: how
    many jobs with no promise kept it plans (None: core.FRESH); the rest are not yet planned.
    """
    result = Schedule(nodes, now, budget, compressions, warm, previous, fresh)
    for job in running:
        result.hold(job, overdue)
    committed = committed or {}
    result.quota = _gated(result, queue, caps, used, rejoining, now, committed)
    result.run(result.quota.plannable, committed, previous=previous)
    return result


def joined_at(queue: Iterable[QueuedJob], now: float) -> float:
    """When a job let in after being held joins the queue: a microsecond (the database's
    resolution) after the pass's moment and after every job's submit time, so that it
    comes behind every job already there (those submitted at that very moment too, since
    ties go by id; and those stamped by a clock a little ahead of this one)."""
    return max(now, max((job.submitted_at for job in queue), default=now)) + 1e-6


def _joined(queue: list[QueuedJob], rejoining: frozenset[int], now: float) -> list[QueuedJob]:
    """A job held at its team's maximum that is let in now is planned as submitted now:
    it never comes ahead of reservations promised while it was held."""
    if not rejoining:
        return queue
    at = joined_at(queue, now)
    return [
        replace(job, submitted_at=max(job.submitted_at, at)) if job.id in rejoining else job
        for job in queue
    ]


def _gated(result, queue, caps, used, rejoining, now, committed):
    """The quota gate over the queue in the order the plan takes it: a job held in the last
    pass comes as submitted now (see :func:`_joined`). Gated in its first place instead, it
    took its team's room ahead of a job let in before it and promised a start meanwhile,
    and held that one back. The jobs ``committed`` with a start keep their promises
    (quotas.gate)."""
    # Its own Capable, sharing the schedule's answers, not a method of the schedule: the
    # gate is kept in the schedule, and a method of the schedule kept there would make a
    # cycle that only the collector frees (a pass's whole plan, held until then).
    placeable = result.alike().placeable
    queue = order(_joined(list(queue), rejoining, now))
    return gate(queue, caps, used or {}, placeable, committed)


@without_gc
def replay(
    nodes: Sequence[SchedNode],
    running: Iterable[RunningJob],
    queue: Iterable[QueuedJob],
    now: float,
    committed: Mapping[int, Reservation],
    caps: Sequence[Cap] = (),
    used: Mapping[int, int] | None = None,
    rejoining: frozenset[int] = frozenset(),
) -> Schedule:
    """The last pass's plan rebuilt from the reservations it returned, for predictions
    between passes: valid reservations are re-booked as they are, only the other jobs
    (submitted since) are searched for, and nothing is compressed — so it is cheap. The
    same quota maximums hold jobs back as in a pass."""
    result = Schedule(nodes, now)
    for job in running:
        result.hold(job)
    result.quota = _gated(result, queue, caps, used, rejoining, now, committed)
    result.run(result.quota.plannable, committed, replay=True)
    return result


def admit(
    nodes: Sequence[SchedNode],
    running: Iterable[RunningJob],
    queue: Iterable[QueuedJob],
    now: float,
    committed: Mapping[int, Reservation] | None = None,
) -> list[Admission]:
    """The jobs to start now, in queue order (gang: all replicas of each at once)."""
    return schedule(nodes, running, queue, now, committed).admissions


def plan(
    nodes: Sequence[SchedNode],
    running: Iterable[RunningJob],
    queue: Iterable[QueuedJob],
    now: float,
    committed: Mapping[int, Reservation] | None = None,
) -> dict[int, Reservation]:
    """Every queued job's position, latest start, spec, reason and blockers."""
    return schedule(nodes, running, queue, now, committed).reservations
