"""Counts over the log of room a pass gives back (jobs.scheduling.settled): how many of a
group's entries start before a moment, and how many of them took their room before a clock.
A job with more within its reach than the reach check would look at counts as reached,
none looked at."""

from __future__ import annotations

from bisect import bisect_left


class Sorted:
    """Values kept sorted in batches: added to ``pending``, merged in when asked (a pass
    adds tens of thousands at once after an urgent submit, then a few per move; one by one
    into a sorted list, those cost a second)."""

    __slots__ = ("pending", "sorted")

    def __init__(self):
        self.sorted: list = []
        self.pending: list = []

    def add(self, value) -> None:
        self.pending.append(value)

    def merged(self) -> list:
        if self.pending:
            self.sorted.extend(self.pending)
            self.sorted.sort()  # a sorted run and the new ones: Timsort merges them
            self.pending.clear()
        return self.sorted


class Starts(Sorted):
    """The starts of a group's log entries, to count those before a moment; the last few
    added are counted unsorted."""

    __slots__ = ()

    def before(self, moment: float) -> int:
        if len(self.pending) > 64:
            self.merged()
        return bisect_left(self.sorted, moment) + sum(1 for s in self.pending if s < moment)


class Aged(Sorted):
    """When a group's log entries took room, as (born, start, place in the group's
    entries): to count those taken before a clock that start before a moment, and to find
    them where they are few."""

    __slots__ = ()

    def older(self, clock: int, at_most: int) -> list[int] | None:
        """The places of the entries taken before ``clock``; None if more than ``at_most``."""
        merged = self.merged()
        k = bisect_left(merged, (clock,))
        return None if k > at_most else [merged[i][2] for i in range(k)]

    def count(self, clock: int, moment: float, starts: Starts, enough: int) -> int:
        """How many entries taken before ``clock`` start before ``moment``; at least
        ``enough`` once as many are found."""
        merged = self.merged()
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
