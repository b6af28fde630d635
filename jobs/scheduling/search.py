"""The earliest-start search over a :class:`~.profile.Profile`, and gang placement.

A gang of ``need`` replicas can start at ``t`` when the nodes' window counts from ``t``
(:meth:`~.profile.Timeline.count`) add up to ``need``. Counts only grow when some item ends,
so the earliest start is the profile's origin or an item's end; the search walks those
times in order with a heap of events: a node is recounted at its own breakpoints, after a
later segment entered its window, or when its first room comes (nodes with none wait in
the heap at no cost).

Nodes of one shape (:class:`~.shapes.Shapes`) have the same events and counts, so the walk
here is over a group's shapes (:class:`~.groups.Group`), each count weighed by how many
nodes have that shape: a thousand alike nodes cost one event, not a thousand. A group
whose nodes mostly differ is searched node by node instead (:mod:`.nodes`). Both find the
same start and counts (property-tested); only the budget, counted in node evaluations,
may run out at another moment.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from itertools import chain, repeat
from math import inf

from jobs.scheduling import nodes as by_node
from jobs.scheduling.groups import SOLO, Group
from jobs.scheduling.node_fit import choose, fit, to_mask
from jobs.scheduling.profile import Profile, demand_key
from jobs.scheduling.search_result import Found, tail_fit
from jobs.scheduling.shapes import NO_ANSWERS
from jobs.scheduling.timeline import Timeline
from resources.placement.capacity import Demand


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
    key = demand_key(demand)
    enough = need if enough is None else max(need, enough)
    rooms = profile.groups.get(group) if group is not None else None
    if rooms is None:
        rooms = Group(profile, indices, demand, key)
    elif isinstance(rooms, Group):
        rooms.update(profile)
    else:
        by_node.update(rooms, profile, demand, key)
    if isinstance(rooms, Group) and len(rooms.members) > SOLO * len(rooms.of):
        rooms = rooms.first_rooms()  # many shapes: node by node is cheaper (see .nodes)
    if group is not None:
        profile.groups[group] = rooms
    if not isinstance(rooms, Group):
        args = (duration, need, horizon, budget, indices, enough)
        return by_node.search(profile, rooms, demand, key, *args)
    found = _at_origin(profile, rooms, key, duration, need, enough)
    if found is None or isinstance(found, Found):
        return found
    return _walk(profile, rooms, key, duration, need, horizon, budget, indices, found)


def _roomy_in_order(profile: Profile, group: Group, enough: int):
    """The nodes last seen with room at the origin, as (node, shape), in the order the
    search counts them: inventory order, or fullest first when there are more than enough
    (the per-node search's order, which decides where a job starting now goes)."""
    roomy = group.roomy
    if sum(map(len, roomy.values())) <= enough:
        return sorted((index, shape) for shape, nodes in roomy.items() for index in nodes)
    # Fullest first, ties in inventory order; nodes of one shape are alike.
    timelines = profile.timelines
    classes: dict[tuple[int, int], list[int]] = {}
    for shape, nodes in roomy.items():
        tl = timelines[nodes[0]]
        classes.setdefault((-tl.mask[0].bit_count(), -tl.cpu[0]), []).append(shape)
    return chain.from_iterable(
        zip(roomy[shapes[0]], repeat(shapes[0]))
        if len(shapes) == 1
        else heapq.merge(*(zip(roomy[shape], repeat(shape)) for shape in shapes))
        for _, shapes in sorted(classes.items())
    )


def _at_origin(profile, group, key, duration, need, enough):
    """Count the nodes with room at the origin. Returns the Found when enough fit then,
    None when nothing can fit ever, else what the walk goes on from: the evaluated shapes'
    ``{shape: (count, recheck, shrinks)}`` and the total."""
    now, members, firsts, unsure = profile.origin, group.members, group.firsts, group.unsure
    answers: dict[int, tuple[int, float, float]] = {}
    per_node: list[tuple[int, list[int]]] = []
    stale: dict[int, list[int]] = {}  # nodes met without room: no longer roomy
    total = 0
    for index, shape in _roomy_in_order(profile, group, enough):
        if (group.exact(shape) if shape in unsure else firsts[shape]) > now:
            stale.setdefault(shape, []).append(index)
            continue
        answer = answers.get(shape)
        if answer is None:
            answer = answers[shape] = _window(profile, group, key, duration, shape, now)
        per_node.append((answer[0], [index]))
        total += answer[0]
        if total >= enough:
            group.forget(stale)
            return Found(now, per_node)
    group.forget(stale)
    if total >= need:
        return Found(now, [(answers[shape][0], list(members[shape])) for shape in answers])
    if not answers and not group.order:
        return None
    return answers, total


def _window(profile, group, key, duration, shape, t):
    tl = profile.timelines[group.members[shape][0]]
    return tl.window(group.demand, key, duration, t)


def _walk(profile, group, key, duration, need, horizon, budget, indices, state):
    """earliest's search proper, over shapes: each weighs as many nodes as it has here.
    ``group.order``: the shapes waiting for their first room, sorted heap entries walked
    beside the heap."""
    answers, total = state
    now, members, order, unsure = profile.origin, group.members, group.order, group.unsure
    demand, timelines = group.demand, profile.timelines
    # Heap entries: (time, 0 = recount then | 1 = may shrink after, shape, version). Version
    # -1 marks a shape not counted yet, waiting for its first room.
    heap: list[tuple[float, int, int, int]] = []
    counts: dict[int, int] = {}  # shapes not in it fit none for now
    version: dict[int, int] = {}
    evaluations = 0
    for shape, (n, recheck, shrinks) in answers.items():
        counts[shape], version[shape] = n, 0
        evaluations += len(members[shape])
        if recheck < inf:
            heap.append((recheck, 0, shape, 0))
        if shrinks < inf:
            heap.append((shrinks, 1, shape, 0))
    heapq.heapify(heap)
    # order[:pos] has room at the origin and was counted there, but for shapes whose first
    # room was only bounded: those have none (see Group.exact), so they move on.
    pos = bisect_left(order, (now, 1))
    for shape in [entry[2] for entry in order[:pos] if entry[2] in unsure]:
        group.exact(shape)
    pos = bisect_left(order, (now, 1))
    moved: dict[int, float] = {}  # exact first rooms of unsure shapes met in the walk

    def ready(shape: int, t: float) -> bool:
        """Whether a shape waiting at a bound of its first room has room at ``t``; when
        not, it waits in the heap for its exact first room."""
        first = moved.get(shape)
        if first is None:
            first = moved[shape] = timelines[members[shape][0]].first_room(demand, key)
        if first > t:
            if first < inf:
                heapq.heappush(heap, (first, 0, shape, -1))
            return False
        return True

    try:
        state = (heap, pos, counts, version, total, evaluations, ready)
        return _steps(profile, group, key, duration, need, horizon, budget, indices, state)
    finally:
        for shape, first in moved.items():
            group.move(shape, first)


def _steps(profile, group, key, duration, need, horizon, budget, indices, state):
    """The walk's loop: time by time, recount the shapes due then."""
    heap, pos, counts, version, total, evaluations, ready = state
    members, order, size, unsure = group.members, group.order, len(group.order), group.unsure
    recount = _recounter(profile, group, key, duration, heap, counts, version)
    # Shapes whose count may have shrunk since they were counted: their old count stays in
    # ``total`` as a bound (it holds until their next recount, which is due anyway), and
    # they are counted again only when the bound reaches ``need`` — most never are.
    shrunk: set[int] = set()
    due: set[int] = set()  # shapes to count at t
    while heap or pos < size:
        # The next entry of the two sorted sources: the walked order and the heap.
        if pos < size and (not heap or order[pos] < heap[0]):
            t, kind, shape, seen = order[pos]
            pos += 1
        else:
            t, kind, shape, seen = heapq.heappop(heap)
        if seen != version.get(shape, -1):
            continue
        if kind == 1:
            shrunk.add(shape)
            continue
        if t > horizon:
            return None
        if seen >= 0 or shape not in unsure or ready(shape, t):
            due.add(shape)
        pos = by_node.due_at(
            t, order, pos, heap, version, lambda o, at: o not in unsure or ready(o, at), due
        )
        if not due:
            continue
        shrunk -= due
        added, weight = recount(due, t)
        total, evaluations = total + added, evaluations + weight
        due.clear()
        if total >= need and shrunk:
            added, weight = recount(shrunk, t)
            total, evaluations = total + added, evaluations + weight
            shrunk.clear()
        if total >= need:
            return Found(t, [(n, list(members[shape])) for shape, n in counts.items() if n])
        if evaluations > budget:
            found = tail_fit(profile, indices, group.demand, need)
            return found if found.start <= horizon else None
    return None


def _recounter(profile, group, key, duration, heap, counts, version):
    """The walk's recount: ``recount(shapes, t)`` counts these shapes at t, moves their
    versions on and queues their next events."""
    members, demand = group.members, group.demand
    windows, timelines = profile.shapes.windows, profile.timelines

    def recount(shapes: set[int], t: float) -> tuple[int, int]:
        """Count these shapes at t: the change to the total, and the nodes counted."""
        added = weight = 0
        for shape in shapes:
            nodes = members[shape]
            answer = windows.get(shape, NO_ANSWERS).get((key, duration, t))
            if answer is None:
                answer = timelines[nodes[0]].window(demand, key, duration, t)
            n, recheck, shrinks = answer
            weight += len(nodes)
            added += (n - counts.get(shape, 0)) * len(nodes)
            counts[shape] = n
            version[shape] = v = version.get(shape, -1) + 1
            if recheck < inf:
                heapq.heappush(heap, (recheck, 0, shape, v))
            if shrinks < inf:
                heapq.heappush(heap, (shrinks, 1, shape, v))
        return added, weight

    return recount


def place(
    found: Found, timelines: list[Timeline], demand: Demand, duration: float, want: int
) -> list[tuple[int, tuple[int, ...]]]:
    """Choose the replicas' nodes and slots at ``found.start``: ``(node index, slots)`` each.

    Tightest nodes first (fewest replicas fit), filling each before the next, so that gangs
    go into the gaps and whole nodes stay free for whole-node jobs; ties by inventory order.
    Slots are chosen as resources.placement.capacity.take does (node_fit.choose) on the
    window's usage.
    """
    chosen = []
    for count, index in _tightest(found.groups):
        node = timelines[index]
        info = node.info
        cpu, mem, mask = node.view(found.start, duration)
        for _ in range(min(count, want - len(chosen))):
            if not fit(demand, info, cpu, mem, mask):  # a bug, never a silent overbooking
                raise AssertionError(f"capacity refused a counted replica on {info.name}")
            slots = choose(demand, info, mask)
            cpu, mem, mask = cpu + demand.cpu, mem + demand.memory, mask | to_mask(slots)
            chosen.append((index, slots))
        if len(chosen) == want:
            break
    return chosen


def _tightest(groups: list[tuple[int, list[int]]]):
    """(count, node) by fewest replicas first, then inventory order, lazily: a placement
    usually needs a few of many nodes."""
    by_count: dict[int, list[list[int]]] = {}
    for n, nodes in groups:
        if n:
            by_count.setdefault(n, []).append(nodes)
    for n in sorted(by_count):
        lists = by_count[n]
        nodes = lists[0] if len(lists) == 1 else sorted(chain.from_iterable(lists))
        yield from zip(repeat(n), nodes)
