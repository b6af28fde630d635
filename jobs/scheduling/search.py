"""The earliest-start search over a :class:`~.profile.Profile`, and gang placement.

A gang of ``need`` replicas can start at ``t`` when the nodes' window counts from ``t``
(:meth:`~.profile.Timeline.count`) add up to ``need``. Counts only grow when some item ends,
so the earliest start is the profile's origin or an item's end; the search walks those
times in order with a heap of per-node events: a node is recounted at its own breakpoints,
after a later segment entered its window, or when its first room comes (nodes with none
wait in the heap at no cost).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from math import inf

from jobs.scheduling.profile import Profile, Timeline, demand_key, fit
from resources.capacity import Demand, take


@dataclass(slots=True)
class Found:
    """A start time and how many replicas fit on each node then."""

    start: float
    counts: dict[int, int]  # node index -> replicas that fit from ``start``


def earliest(
    profile: Profile,
    indices: list[int],
    demand: Demand,
    duration: float,
    need: int,
    horizon: float = inf,
    budget: int = 1 << 62,
    group: object = None,
    enough: int | None = None,
) -> Found | None:
    """The earliest start from the profile's origin when ``need`` replicas fit on these nodes.

    ``indices``: the nodes the job may use, each able to hold a replica once idle; ``group``
    names them with the demand for the profile's cache (None: no cache). None
    when nothing fits by ``horizon``. After ``budget`` node evaluations the search stops
    looking for holes and appends the job where the nodes fall idle (:func:`tail_fit`): a
    later start than the exact one may be, but a real one, and the cost stays bounded.

    When it fits at the origin, nodes are counted fullest first and counting stops once
    ``enough`` replicas fit (the most the job takes): a job starting now on a quiet cluster
    need not look at every node, and the placement still fills the fullest ones.
    """
    timelines, now = profile.timelines, profile.origin
    key = demand_key(demand)
    if group is None:
        starts = {i: timelines[i].first_room(demand, key) for i in indices}
    else:
        starts = profile.first_rooms(group, indices, demand, key)
    # Heap entries: (time, 0 = recount then | 1 = may shrink after, node, version). Version
    # -1 marks a node not counted yet, waiting at a lower bound of its first room.
    heap: list[tuple[float, int, int, int]] = []
    counts: dict[int, int] = {}  # nodes not in it fit none for now
    version: dict[int, int] = {}
    total = evaluations = 0

    def evaluate(tl: Timeline, t: float) -> tuple[int, float, float]:
        start = tl.next_room(demand, key, duration, t)
        if start > t:  # no window from t lies in room: skip to the first that does
            return 0, start, inf
        n, recheck, shrinks = tl.count(demand, duration, t)
        return n, (recheck if n else tl.next_room(demand, key, duration, recheck)), shrinks

    def refresh(index: int, t: float, wait: bool = True) -> bool:
        """Whether a node waiting at a lower bound has room at ``t``; else wait longer."""
        starts[index] = first = timelines[index].first_room(demand, key)
        if first > t:
            if wait and first < inf:
                heapq.heappush(heap, (first, 0, index, -1))
            return False
        return True

    roomy = [i for i, start in starts.items() if start == now]
    enough = need if enough is None else max(need, enough)
    if len(roomy) > enough:
        roomy.sort(key=lambda i: (-timelines[i].mask[0].bit_count(), -timelines[i].cpu[0]))
    for index in roomy:
        if not refresh(index, now, wait=False):  # it waits in the heap built below
            continue
        n, recheck, shrinks = evaluate(timelines[index], now)
        evaluations += 1
        counts[index], version[index] = n, 0
        total += n
        if total >= enough:
            return Found(now, counts)
        if recheck < inf:
            heap.append((recheck, 0, index, 0))
        if shrinks < inf:
            heap.append((shrinks, 1, index, 0))
    if total >= need:
        return Found(now, counts)
    heap += [(start, 0, i, -1) for i, start in starts.items() if now < start < inf]
    heapq.heapify(heap)
    stale: set[int] = set()  # nodes whose count may have shrunk since they were evaluated
    while heap:
        t, kind, index, seen = heapq.heappop(heap)
        if seen != version.get(index, -1):
            continue
        if kind == 1:
            stale.add(index)
            continue
        if t > horizon:
            return None
        if seen >= 0 or refresh(index, t):
            stale.add(index)
        while heap and heap[0][0] == t and heap[0][1] == 0:
            _, _, other, seen = heapq.heappop(heap)
            if seen == version.get(other, -1) and (seen >= 0 or refresh(other, t)):
                stale.add(other)
        for index in stale:
            n, recheck, shrinks = evaluate(timelines[index], t)
            total += n - counts.get(index, 0)
            counts[index] = n
            version[index] = v = version.get(index, -1) + 1
            if recheck < inf:
                heapq.heappush(heap, (recheck, 0, index, v))
            if shrinks < inf:
                heapq.heappush(heap, (shrinks, 1, index, v))
        evaluations += len(stale)
        stale.clear()
        if total >= need:
            return Found(t, counts)
        if evaluations > budget:
            found = tail_fit(profile, indices, demand, need)
            return found if found.start <= horizon else None
    return None


def tail_fit(profile: Profile, indices: list[int], demand: Demand, need: int) -> Found:
    """Append the job where enough nodes have fallen idle (only base usage left)."""
    counts: dict[int, int] = {}
    total = 0
    start = profile.origin
    for tl in sorted((profile.timelines[i] for i in indices), key=Timeline.tail):
        info = tl.info
        n = fit(demand, info, info.base_cpu, info.base_mem, info.base_mask)
        counts[info.index] = n
        total += n
        start = tl.tail()
        if total >= need:
            break
    return Found(start, counts)


def place(
    found: Found, timelines: list[Timeline], demand: Demand, duration: float, want: int
) -> list[tuple[int, tuple[int, ...]]]:
    """Choose the replicas' nodes and slots at ``found.start``: ``(node index, slots)`` each.

    Tightest nodes first (fewest replicas fit), filling each before the next, so that gangs
    go into the gaps and whole nodes stay free for whole-node jobs; ties by inventory order.
    Slots are chosen by resources.capacity.take on the window's usage.
    """
    chosen = []
    for count, index in sorted((c, i) for i, c in found.counts.items() if c):
        node = timelines[index]
        state = node.info.state(*node.view(found.start, duration))
        for _ in range(min(count, want - len(chosen))):
            slots = take(demand, state)
            if slots is None:  # fit() and capacity disagree: a bug, never a silent overbooking
                raise AssertionError(f"capacity refused a counted replica on {node.info.name}")
            chosen.append((index, tuple(slots)))
        if len(chosen) == want:
            break
    return chosen
