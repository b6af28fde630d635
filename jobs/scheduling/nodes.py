"""The earliest-start search node by node, for groups whose nodes have many shapes.

Where most nodes of a group differ (a busy cluster, where running jobs end at scattered
times), asking each shape once saves little and following every node's shape costs more
than it saves: such a group keeps, per node, a lower bound of its first room instead
(:class:`FirstRooms`), which a booking leaves true (it only makes the first room later), so
nothing is done per booking; a search refreshes the bounds it walks past. It finds what
:mod:`.search` finds over shapes (a property test holds the two equal).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from math import inf

from jobs.scheduling.profile import Profile
from jobs.scheduling.search_result import Found, tail_fit
from jobs.scheduling.shapes import NO_ANSWERS
from jobs.scheduling.timeline import Timeline
from resources.placement.capacity import Demand


class FirstRooms:
    """A group's nodes in order of the first moment each has room for a replica.

    ``starts`` holds a lower bound per node; ``order`` the finite ones as the search's heap
    entries ``(start, 0, index, -1)``, kept sorted, so that a search walks them in time
    order instead of building a heap of every node each time (a queue of a thousand jobs
    on a thousand nodes would spend most of its time there).
    """

    __slots__ = ("order", "seen", "starts")

    def __init__(self, starts: dict[int, float]):
        self.starts = starts
        self.order = sorted((start, 0, i, -1) for i, start in starts.items() if start < inf)
        self.seen = 0  # entries of Profile.changes already accounted for

    def move(self, index: int, start: float) -> None:
        old = self.starts[index]
        if old != start:
            order = self.order
            if old < inf:
                del order[bisect_left(order, (old, 0, index, -1))]
            if start < inf:
                insort(order, (start, 0, index, -1))
            self.starts[index] = start


def first_rooms(profile: Profile, indices, demand: Demand, key: tuple) -> FirstRooms:
    timelines = profile.timelines
    rooms = FirstRooms({i: timelines[i].first_room(demand, key) for i in indices})
    rooms.seen = len(profile.changes)
    return rooms


def update(rooms: FirstRooms, profile: Profile, demand: Demand, key: tuple) -> None:
    """A removal may make a node's first room earlier: work those out again."""
    changes = profile.changes
    if rooms.seen < len(changes):
        timelines, starts = profile.timelines, rooms.starts
        for i in {~c for c in changes[rooms.seen :] if c < 0}:
            if i in starts:
                rooms.move(i, timelines[i].first_room(demand, key))
        rooms.seen = len(changes)


def search(profile, rooms, demand, key, duration, need, horizon, budget, indices, enough):
    """earliest over a FirstRooms; its bounds move to what the walk learnt."""
    moved: dict[int, float] = {}  # new lower bounds, kept once the walk is over
    args = (moved, demand, key, duration, need, horizon, budget, indices, enough)
    try:
        return _walk(profile, rooms.order, *args)
    finally:
        starts = rooms.starts
        for index, start in moved.items():
            if starts[index] != start:
                rooms.move(index, start)


def _found(start: float, counts: dict[int, int]) -> Found:
    return Found(start, [(n, [index]) for index, n in counts.items()])


def _walk(profile, order, moved, demand, key, duration, need, horizon, budget, indices, enough):
    """The search proper. ``order``: the nodes waiting for their first room, sorted heap
    entries walked beside the heap (never changed here: new bounds go to ``moved``)."""
    timelines = profile.timelines
    # Heap entries: (time, 0 = recount then | 1 = may shrink after, node, version). Version
    # -1 marks a node not counted yet, waiting at a lower bound of its first room.
    heap: list[tuple[float, int, int, int]] = []
    counts: dict[int, int] = {}  # nodes not in it fit none for now
    version: dict[int, int] = {}
    # The shapes' windows, looked up here rather than through Timeline's methods: a walk
    # asks them for every node event, and most are known (see shapes.Shapes).
    windows = profile.shapes.windows

    def refresh(index: int, t: float, wait: bool = True) -> bool:
        """Whether a node waiting at a lower bound has room at ``t``; else wait longer."""
        if moved.get(index) == t:  # found exact at t by an earlier refresh of this walk
            return True
        first = timelines[index].first_room(demand, key)
        moved[index] = first
        if first > t:
            if wait and first < inf:
                heapq.heappush(heap, (first, 0, index, -1))
            return False
        return True

    def evaluate(tl: Timeline, t: float) -> tuple[int, float, float]:
        shape = tl.shape if tl.shape is not None else tl.shape_id()
        answer = windows.get(shape, NO_ANSWERS).get((key, duration, t))
        return answer or tl.window(demand, key, duration, t)

    state = (heap, counts, version, refresh, evaluate)
    pos = bisect_left(order, (profile.origin, 1))  # order[:pos]: the nodes with room now
    counted = _at_origin(profile, order[:pos], moved, need, enough, state)
    if isinstance(counted, Found):
        return counted
    heapq.heapify(heap)
    return _steps(profile, order, pos, demand, need, horizon, budget, indices, state, counted)


def _at_origin(profile, roomy_entries, moved, need, enough, state):
    """Count the nodes with room at the origin, fullest first when there are more than
    ``enough``. Returns the Found when enough fit then, else what the walk goes on from:
    the total and the evaluations made."""
    heap, counts, version, refresh, evaluate = state
    timelines, now = profile.timelines, profile.origin
    total = evaluations = 0
    roomy = [entry[2] for entry in roomy_entries]
    if len(roomy) > enough:
        # Fullest first, ties in inventory order; usually a few nodes are enough, so the
        # order is taken lazily from a heap rather than sorting every node with room.
        first = [timelines[i] for i in roomy]
        fullest = [(-tl.mask[0].bit_count(), -tl.cpu[0], tl.info.index) for tl in first]
        heapq.heapify(fullest)
        roomy = (heapq.heappop(fullest)[2] for _ in range(len(fullest)))
    for index in roomy:
        if not refresh(index, now, wait=False):
            if moved[index] < inf:  # it waits for its first room like the others
                heap.append((moved[index], 0, index, -1))
            continue
        n, recheck, shrinks = evaluate(timelines[index], now)
        evaluations += 1
        counts[index], version[index] = n, 0
        total += n
        if total >= enough:
            return _found(now, counts)
        if recheck < inf:
            heap.append((recheck, 0, index, 0))
        if shrinks < inf:
            heap.append((shrinks, 1, index, 0))
    if total >= need:
        return _found(now, counts)
    return total, evaluations


def _steps(profile, order, pos, demand, need, horizon, budget, indices, state, counted):
    """The walk's loop: time by time, recount the nodes due then."""
    heap, counts, version, refresh, evaluate = state
    total, evaluations = counted
    timelines, size = profile.timelines, len(order)
    stale: set[int] = set()  # nodes whose count may have shrunk since they were evaluated
    while heap or pos < size:
        # The next entry of the two sorted sources: the walked order and the heap.
        if pos < size and (not heap or order[pos] < heap[0]):
            t, kind, index, seen = order[pos]
            pos += 1
        else:
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
        pos = due_at(t, order, pos, heap, version, refresh, stale)
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
            return _found(t, counts)
        if evaluations > budget:
            found = tail_fit(profile, indices, demand, need)
            return found if found.start <= horizon else None
    return None


def due_at(t, order, pos, heap, version, settled, due: set[int]) -> int:
    """Add every other entry (a node here, a shape in the search by shape) whose recount is
    due at ``t`` to ``due``, taking their entries from both sources; ``settled(other, t)``
    says whether an entry not yet counted (``seen`` < 0) may be counted now. Returns the
    walked order's next position."""
    size = len(order)
    while True:
        if pos < size and (not heap or order[pos] < heap[0]):
            entry = order[pos]
            if entry[0] != t:
                break
            pos += 1
        elif heap and heap[0][0] == t and heap[0][1] == 0:
            entry = heapq.heappop(heap)
        else:
            break
        other, seen = entry[2], entry[3]
        if seen == version.get(other, -1) and (seen >= 0 or settled(other, t)):
            due.add(other)
    return pos
