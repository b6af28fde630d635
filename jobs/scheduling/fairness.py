"""Fair share (SPEC G3): within a priority class, the jobs of the team furthest below its
share of the cluster's recent use go first; then SPEC Q2's rules.

Pure. *Use* is board-seconds, each decayed by its age with the admin's half-life (a board
held a half-life ago counts half, two half-lives ago a quarter...), so a team that ran much
last week but little since is not held back for ever. A team's *share* is its weight over
the weights of the teams that have used or want the cluster. Its standing is its use over
its share: the lower, the earlier its jobs come (:func:`standing`); teams that used nothing
stand at 0 and come first, in submit order among themselves.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping


def decayed(boards: float, start: float, end: float, now: float, half_life: float) -> float:
    """Board-seconds of ``boards`` held from ``start`` to ``end`` (seconds), each second
    weighted 2^-(age / half_life): the integral of the decay over the interval."""
    end = min(end, now)
    if end <= start or boards <= 0:
        return 0.0
    rate = math.log(2) / half_life
    return boards * (math.exp(-rate * (now - end)) - math.exp(-rate * (now - start))) / rate


def use(
    intervals: Iterable[tuple[int, float, float, float | None]], now: float, half_life: float
) -> dict[int, float]:
    """Decayed use per project from ``(project, boards, start, end or None if still held)``."""
    found: dict[int, float] = {}
    for project, boards, start, end in intervals:
        held = decayed(boards, start, now if end is None else end, now, half_life)
        found[project] = found.get(project, 0.0) + held
    return found


# Board-seconds each team is counted as having used at its share, beyond what it used: a
# board-hour. Without it a few seconds of use, all there is when a cluster starts or a team
# comes back, would reorder the queue on noise (one job ending a second before another).
GRACE = 3600.0


def standing(
    used: Mapping[int, float], weights: Mapping[int, float], grace: float = 0.0
) -> dict[int, float]:
    """Each project's use over its share of all the use (1.0: exactly its share; lower:
    below it). Projects without a weight weigh 1. ``grace``: board-seconds each project is
    counted as having used at its share besides (see GRACE): small uses then stand near 1."""
    projects = set(used) | set(weights)
    total_weight = sum(weights.get(p, 1.0) for p in projects) or 1.0
    share = {p: weights.get(p, 1.0) / total_weight for p in projects}
    prior = grace * len(projects)
    total_use = sum(used.values()) + prior
    if total_use <= 0:
        return dict.fromkeys(projects, 0.0)
    return {p: ((used.get(p, 0.0) + prior * share[p]) / total_use) / share[p] for p in projects}


def rank(values: Mapping[int, float], digits: int = 2) -> dict[int, float]:
    """Standings rounded to ``digits`` significant digits: teams whose standings differ by
    less than that keep submit order between their jobs, so that a pass does not reorder
    the queue for a difference of a few board-seconds."""
    return {p: float(f"{v:.{digits}g}") if v else 0.0 for p, v in values.items()}
