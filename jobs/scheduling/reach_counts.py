"""Counts over the log of room a pass gives back (jobs.scheduling.settled): how many of a
group's entries start before a moment, and how many of them took their room before a clock.
A job with more within its reach than the reach check would look at counts as reached,
none looked at."""

from __future__ import annotations

from bisect import bisect_left


class Starts:
    """The starts of a group's log entries, to count those before a moment: sorted, but for
    the last few added (a pass adds tens of thousands at once after an urgent submit, then a
    few per move; one by one into a sorted list, those cost a second)."""

    __slots__ = ("pending", "sorted")

    def __init__(self):
        self.sorted: list[float] = []
        self.pending: list[float] = []

    def add(self, start: float) -> None:
        self.pending.append(start)

    def before(self, moment: float) -> int:
        pending = self.pending
        if len(pending) > 64:
            self.sorted.extend(pending)
            self.sorted.sort()  # a sorted run and the new ones: Timsort merges them
            pending.clear()
        return bisect_left(self.sorted, moment) + sum(1 for start in pending if start < moment)


class Aged:
    """When a group's log entries took room, with their starts and places in the group's
    entries: to count those taken before a clock that start before a moment, and to find
    them where they are few."""

    __slots__ = ("pending", "sorted")

    def __init__(self):
        self.sorted: list[tuple[int, float, int]] = []
        self.pending: list[tuple[int, float, int]] = []

    def _merged(self) -> list[tuple[int, float, int]]:
        if self.pending:
            self.sorted.extend(self.pending)
            self.sorted.sort()
            self.pending.clear()
        return self.sorted

    def older(self, clock: int, at_most: int) -> list[int] | None:
        """The places of the entries taken before ``clock``; None if more than ``at_most``."""
        merged = self._merged()
        k = bisect_left(merged, (clock,))
        return None if k > at_most else [merged[i][2] for i in range(k)]

    def count(self, clock: int, moment: float, starts: Starts, enough: int) -> int:
        """How many entries taken before ``clock`` start before ``moment``; at least
        ``enough`` once as many are found."""
        merged = self._merged()
        k = bisect_left(merged, (clock,))
        if 2 * k <= len(merged):
            found = 0
            for i in range(k):
                if merged[i][1] < moment:
                    found += 1
                    if found >= enough:
                        break
            return found
        return starts.before(moment) - sum(
            1 for i in range(k, len(merged)) if merged[i][1] < moment
        )
