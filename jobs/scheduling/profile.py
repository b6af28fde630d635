"""The time-resource profile: every node's :class:`~.timeline.Timeline` from a pass's
moment on, and what searches learnt about them (searched in .search)."""

from __future__ import annotations

from jobs.scheduling.node_fit import NodeInfo
from jobs.scheduling.shapes import Shapes
from jobs.scheduling.timeline import Item, Timeline
from resources.placement.capacity import Demand


class Profile:
    """Every node's timeline from ``origin`` on, and what searches learnt about them.

    Searches for the same nodes and demand recur all through a queue; so each such group
    (:class:`~.groups.Group`) is kept, and follows the nodes that changed since its last
    search through ``changes``: the index of each node something was added to, ``~index``
    of each node something left.

    ``freed``, when a pass keeps it (:mod:`.settled`), logs the room each removal gives
    back as ``(node index, start, end, born)``: ``born`` is the ``clock`` when its owner first
    took room (``born``, of the owners added or removed since it was set; the others'
    are ``inherited``); ``cut_short`` counts the searches that ran out of budget (their
    start may not be the earliest).
    """

    def __init__(self, infos: list[NodeInfo], origin: float):
        self.origin = origin
        self.shapes = Shapes()
        self.timelines = [Timeline(info, origin, self.shapes) for info in infos]
        self.changes: list[int] = []
        self.groups: dict[object, object] = {}
        self.freed: list[tuple[int, float, float, int]] | None = None
        self.born: dict[int, int] | None = None
        self.inherited: dict[int, int] = {}
        self.clock = 0
        self.cut_short = 0

    def __getstate__(self) -> dict:
        """A stored profile leaves the groups' searches behind (made again on demand); the
        change list only serves them, so it goes too, as does the pass's log of room."""
        return {**self.__dict__, "groups": {}, "changes": [], "freed": None, "born": None,
                "inherited": {}}  # fmt: skip

    def add(self, index: int, key: object, item: Item) -> None:
        self.timelines[index].add(key, item)
        self.changes.append(index)
        if self.born is not None:  # moved, it took room since its first
            self._born(key[0], self.clock)

    def remove(self, index: int, key: object) -> Item:
        self.changes.append(~index)
        item = self.timelines[index].remove(key)
        if self.freed is not None:
            self.freed.append((index, item.start, item.end, self._born(key[0], 0)))
        return item

    def remove_all(self, index: int, keys: list) -> None:
        """:meth:`remove` of each of ``keys``, on one node, at once (Timeline.remove_all)."""
        self.changes.append(~index)
        items = self.timelines[index].remove_all(keys)
        if self.freed is not None:
            self.freed.extend((index, item.start, item.end, self._born(key[0], 0))
                              for key, item in zip(keys, items, strict=True))  # fmt: skip

    def _born(self, owner: int, otherwise: int) -> int:
        """The clock when ``owner`` first took room: what the last plan said, else
        ``otherwise``, kept from its first add or removal on."""
        born = self.born.get(owner)
        if born is None:
            born = self.born[owner] = self.inherited.get(owner, otherwise)
        return born


def demand_key(demand: Demand) -> tuple:
    return (demand.cpu, demand.memory, demand.boards, demand.slice_divisor, demand.model)
