"""Reclaim (SPEC G2): which borrowing jobs stop so that a job waiting within its team's
guarantee can start.

Pure: plain data in, decisions out; the database layer (jobs.admission.reclaim) finds the
claims and the borrowers and stops the victims.

The rule: only *borrowers* are ever victims (jobs admitted beyond their project's guarantee,
still running on another project's accelerator model and pool than the claim's own), and a
project is never taken below its guarantee: a borrower is a candidate while what its project
holds, less the victims already taken from it, is above that guarantee. Candidates are taken
lowest priority first, then the newest started; the victims are the shortest run of them
after which the claim starts now (``starts``, asked of the admission model itself), and none
when even all of them would not let it start: nobody is stopped for nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Borrower:
    """A running job admitted on borrowed boards: ``holds`` eighths of ``model`` boards in
    ``pool`` (None: the shared nodes) for ``project``."""

    id: int
    project: int
    priority: int
    started_at: float
    model: int
    pool: int | None
    holds: int


@dataclass(frozen=True, slots=True)
class Claim:
    """A queued job of ``project`` that fits its guarantee of ``model`` boards in ``pool``
    and cannot start now."""

    id: int
    project: int
    model: int
    pool: int | None


def candidates(
    claim: Claim,
    borrowers: Iterable[Borrower],
    held: Mapping[int, int],
    guaranteed: Mapping[int, int],
    taken: Iterable[int] = (),
) -> list[Borrower]:
    """The borrowers that may stop for ``claim``, in the order they would: lowest priority,
    then the newest. ``held``/``guaranteed``: eighths each project holds now and is
    guaranteed of the claim's model in its pool; ``taken``: victims already chosen (for
    this claim or another one): they count as gone, and are not candidates again."""
    taken = set(taken)
    pool = [
        b
        for b in borrowers
        if b.project != claim.project
        and b.model == claim.model
        and b.pool == claim.pool
        and b.id not in taken
    ]
    left = dict(held)
    for b in borrowers:
        if b.id in taken:
            left[b.project] = left.get(b.project, 0) - b.holds
    chosen = []
    for b in sorted(pool, key=lambda b: (b.priority, -b.started_at, -b.id)):
        if left.get(b.project, 0) > guaranteed.get(b.project, 0):
            chosen.append(b)
            left[b.project] -= b.holds
    return chosen


def victims(
    ordered: Sequence[Borrower], starts: Callable[[frozenset[int]], bool]
) -> tuple[int, ...] | None:
    """The shortest run of ``ordered`` (candidates, in order) whose stopping lets the claim
    start now: ``starts(ids)`` says whether it would with those jobs gone. () when it
    starts with none of them gone; None when not even all of them would do."""
    if starts(frozenset()):
        return ()
    if not ordered or not starts(frozenset(b.id for b in ordered)):
        return None
    # More room never keeps a job from starting: bisect on the length of the run.
    low, high = 1, len(ordered)
    while low < high:
        middle = (low + high) // 2
        if starts(frozenset(b.id for b in ordered[:middle])):
            high = middle
        else:
            low = middle + 1
    return tuple(b.id for b in ordered[:low])
