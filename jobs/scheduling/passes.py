"""One scheduling pass over a queue (core.py says how it keeps its promises): :func:`schedule`,
the admissions it makes now (:func:`admit`), every queued job's reservation (:func:`plan`),
and :func:`replay`, the last pass rebuilt cheaply for predictions between passes."""

from __future__ import annotations

import functools
import gc
from collections.abc import Iterable, Mapping, Sequence

from jobs.scheduling.core import BUDGET, COMPRESSIONS, OVERDUE, Schedule
from jobs.scheduling.data import (
    Admission,
    QueuedJob,
    Reservation,
    RunningJob,
    SchedNode,
)
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
) -> Schedule:
    """One admission pass: reservations for every queued job and the admissions now.

    Pass ``committed``, the previous pass's reservations, to keep their starts as promises,
    and ``previous``, an earlier pass's ``digest``, to spare the searches that would keep
    them as they are (the plan is the same with or without it, given compressions enough
    for every search it makes: ``compressions`` bounds the kept reservations searched
    again, see core.COMPRESSIONS).
    """
    result = Schedule(nodes, now, budget, compressions)
    for job in running:
        result.hold(job, overdue)
    result.run(queue, committed or {}, previous=previous)
    return result


@without_gc
def replay(
    nodes: Sequence[SchedNode],
    running: Iterable[RunningJob],
    queue: Iterable[QueuedJob],
    now: float,
    committed: Mapping[int, Reservation],
) -> Schedule:
    """The last pass's plan rebuilt from the reservations it returned, for predictions
    between passes: valid reservations are re-booked as they are, only the other jobs
    (submitted since) are searched for, and nothing is compressed — so it is cheap."""
    result = Schedule(nodes, now)
    for job in running:
        result.hold(job)
    result.run(queue, committed, replay=True)
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
