"""A search group's nodes bucketed by shape, so that the search walks shapes, not nodes.

A *group* is the nodes one kind of job may use with one demand (its rules and spec). The
queue searches the same few groups again and again, and most of a group's nodes share a
few shapes (:class:`~.shapes.Shapes`): nodes of one shape answer every question alike, so
the search (:mod:`.search`) asks each shape once and weighs the answer by its members.

The group follows the profile lazily: before a search it re-buckets only the nodes that
changed since its last one (``Profile.changes``).

``roomy`` keeps what the earlier, per-node search remembered: the nodes it last saw with
room at the origin. A booking does not take a node out (only a search that meets it
there, or a removal, does), and the search takes them in an order that depends on how
many there are, which decides which nodes a job starting now gets; so it is kept exactly.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from math import inf

from resources.placement.capacity import Demand

# A group whose nodes have more shapes than this share of its nodes goes node by node
# (Group.first_rooms, .nodes): re-bucketing every node a booking changes costs more than
# the few shared answers save (a busy cluster where running jobs end at scattered times).
SOLO = 0.5


class Group:
    __slots__ = (
        "demand",
        "firsts",
        "key",
        "members",
        "of",
        "order",
        "origin",
        "roomy",
        "seen",
        "timelines",
        "unsure",
    )

    def __init__(self, profile, indices: list[int], demand: Demand, key: tuple):
        timelines = self.timelines = profile.timelines
        self.demand, self.key = demand, key
        self.of: dict[int, int] = {}  # node index -> its shape
        self.members: dict[int, list[int]] = {}  # shape -> its nodes here, sorted
        for index in sorted(indices):
            shape = timelines[index].shape_id()
            self.of[index] = shape
            self.members.setdefault(shape, []).append(index)
        # shape -> the first moment its nodes have room for one replica (see Timeline.runs),
        # or a lower bound of it for the shapes in ``unsure`` (see _join).
        self.unsure: set[int] = set()
        self.firsts = {
            shape: timelines[nodes[0]].first_room(demand, key)
            for shape, nodes in self.members.items()
        }
        # The shapes with room some day, as the search's sorted heap entries.
        self.order = sorted((f, 0, s, -1) for s, f in self.firsts.items() if f < inf)
        origin = profile.origin
        self.roomy: dict[int, list[int]] = {}  # shape -> sorted nodes seen with room at origin
        for shape, nodes in self.members.items():
            if self.firsts[shape] == origin:
                self.roomy[shape] = list(nodes)
        self.seen = len(profile.changes)
        self.origin = origin

    def first_rooms(self):
        """This group node by node (:class:`.nodes.FirstRooms`), as the per-node search
        would have it: the nodes in ``roomy`` at the origin, the others at their first
        room (which the per-node search knew, or a bound of it, always past the origin)."""
        from jobs.scheduling.nodes import FirstRooms

        roomy = {index for nodes in self.roomy.values() for index in nodes}
        origin, firsts, timelines = self.origin, {}, self.timelines
        for shape, nodes in self.members.items():
            first = self.firsts[shape]
            if shape in self.unsure:
                first = timelines[nodes[0]].first_room(self.demand, self.key)
            for index in nodes:
                firsts[index] = origin if index in roomy else first
        rooms = FirstRooms(firsts)
        rooms.seen = self.seen
        return rooms

    def update(self, profile) -> None:
        """Re-bucket the nodes changed since the last search (and, like the per-node search
        did, forget a removal's node in ``roomy`` unless it has room at the origin)."""
        changes = profile.changes
        if self.seen == len(changes):
            return
        # Removals are logged as ~index: a removal's node is looked at afresh.
        logged = set(changes[self.seen :])
        self.seen = len(changes)
        removed = {~c for c in logged if c < 0} if min(logged) < 0 else set()
        of, roomy, timelines, origin = self.of, self.roomy, self.timelines, profile.origin
        for index in logged.union(removed).intersection(of):
            tl = timelines[index]
            old, new = of[index], tl.shape if tl.shape is not None else tl.shape_id()
            if old == new and index not in removed:
                continue  # booked and unbooked alike since: nothing moves
            was_roomy = old in roomy and self._leave_roomy(old, index)
            if old != new:
                bound = self.firsts[old]
                self._leave(old, index)
                self._join(new, index, -inf if index in removed else bound)
                of[index] = new
            if index in removed:
                was_roomy = self.exact(new) == origin
            if was_roomy:
                insort(roomy.setdefault(new, []), index)

    def _leave_roomy(self, shape: int, index: int) -> bool:
        nodes = self.roomy.get(shape)
        if nodes is None:
            return False
        k = bisect_left(nodes, index)
        if k == len(nodes) or nodes[k] != index:
            return False
        del nodes[k]
        if not nodes:
            del self.roomy[shape]
        return True

    def _leave(self, shape: int, index: int) -> None:
        nodes = self.members[shape]
        del nodes[bisect_left(nodes, index)]
        if not nodes:
            del self.members[shape]
            self.unsure.discard(shape)
            first = self.firsts.pop(shape)
            if first < inf:
                del self.order[bisect_left(self.order, (first, 0, shape, -1))]

    def _join(self, shape: int, index: int, bound: float) -> None:
        """Add a node to a shape. Its first room is worked out when a search needs it: a
        node only booked more since its last shape has its first room no earlier than
        that shape's (``bound``), and most shapes a booking makes are never walked to."""
        nodes = self.members.get(shape)
        if nodes is not None:
            insort(nodes, index)
            return
        self.members[shape] = [index]
        if bound == -inf:
            first = self.firsts[shape] = self.timelines[index].first_room(self.demand, self.key)
        else:
            first = self.firsts[shape] = bound
            if bound < inf:
                self.unsure.add(shape)
        if first < inf:
            insort(self.order, (first, 0, shape, -1))

    def exact(self, shape: int) -> float:
        """The shape's first room, made exact (and its place in ``order`` with it)."""
        if shape in self.unsure:
            first = self.timelines[self.members[shape][0]].first_room(self.demand, self.key)
            self.move(shape, first)
        return self.firsts[shape]

    def move(self, shape: int, first: float) -> None:
        """Set a shape's exact first room (no earlier than the bound it had)."""
        self.unsure.discard(shape)
        old = self.firsts[shape]
        if old != first:
            order = self.order
            if old < inf:
                del order[bisect_left(order, (old, 0, shape, -1))]
            if first < inf:
                insort(order, (first, 0, shape, -1))
            self.firsts[shape] = first

    def forget(self, stale: dict[int, list[int]]) -> None:
        """Take out of ``roomy`` the nodes a search met there without room."""
        for shape, nodes in stale.items():
            left = self.roomy[shape]
            drop = set(nodes)
            left[:] = [index for index in left if index not in drop]
            if not left:
                del self.roomy[shape]
