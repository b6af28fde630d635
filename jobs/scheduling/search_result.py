"""What an earliest-start search finds, and its fallback when out of budget."""

from __future__ import annotations

from jobs.scheduling.node_fit import fit
from jobs.scheduling.profile import Profile
from jobs.scheduling.timeline import Timeline
from resources.placement.capacity import Demand


class Found:
    """A start time and how many replicas fit on each node then.

    ``groups``: ``(count, node indices in inventory order)``, the nodes of one shape (or a
    lone node) together: a search over a thousand alike nodes need not list each.
    """

    __slots__ = ("groups", "start")

    def __init__(self, start: float, groups: list[tuple[int, list[int]]]):
        self.start, self.groups = start, groups

    @property
    def counts(self) -> dict[int, int]:
        """node index -> replicas that fit from ``start`` (nodes fitting none left out)."""
        return {index: n for n, nodes in self.groups if n for index in nodes}

    @property
    def total(self) -> int:
        return sum(n * len(nodes) for n, nodes in self.groups)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Found):
            return NotImplemented
        return self.start == other.start and self.counts == other.counts

    def __repr__(self) -> str:
        return f"Found({self.start!r}, {self.counts!r})"


def tail_fit(profile: Profile, indices: list[int], demand: Demand, need: int) -> Found:
    """Append the job where enough nodes have fallen idle (only base usage left): a real
    start, but maybe not the earliest (counted in ``profile.cut_short``)."""
    profile.cut_short += 1
    counts: list[tuple[int, list[int]]] = []
    total = 0
    start = profile.origin
    for tl in sorted((profile.timelines[i] for i in indices), key=Timeline.tail):
        info = tl.info
        n = fit(demand, info, info.base_cpu, info.base_mem, info.base_mask)
        counts.append((n, [info.index]))
        total += n
        start = tl.tail()
        if total >= need:
            break
    return Found(start, counts)
