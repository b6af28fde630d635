"""A pass's node shapes (node kind and usage over time) and the answers they share: see
:class:`Shapes`."""

from __future__ import annotations


class ShapeKey:
    """A shape's key (node kind, then usage over time) that hashes once. A tuple's hash is
    worked out again at every dict operation, over every segment of the timeline: forgetting
    a shape cost more the longer its timeline, and so the pass grew faster than its queue."""

    __slots__ = ("hash", "parts")

    def __init__(self, parts: tuple):
        self.parts = parts
        self.hash = hash(parts)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, ShapeKey) and self.parts == other.parts)

    def __reduce__(self):
        # Hashed again where it is unpickled: a string's hash differs between processes.
        return ShapeKey, (self.parts,)


class Shapes:
    """Answers shared by every timeline of the same *shape*: node kind and usage over time.

    A pass has few shapes for many nodes (nodes of one kind, idle or filled alike by jobs
    ending at the same moments), and a queue asks the same few demands and durations again
    and again, so a node changing only costs a lookup of its new shape: the searches'
    questions about it are mostly answered already. Ids are per profile and never reused.

    A shape no timeline has any more is forgotten with its answers: a long queue passes
    every node through hundreds of shapes, and keeping them all made a pass over 30,000
    jobs hold gigabytes.
    """

    __slots__ = ("ids", "keys", "next", "runs", "users", "windows")

    def __init__(self) -> None:
        self.ids: dict[ShapeKey, int] = {}
        self.keys: dict[int, ShapeKey | None] = {}  # id -> its key in ids (None: own)
        self.users: dict[int, int] = {}  # id -> timelines of that shape now
        self.next = 0
        self.runs: dict[int, dict[tuple, tuple[list[float], list[float]]]] = {}  # by demand key
        self.windows: dict[int, dict[tuple, tuple[int, float, float]]] = {}  # see window

    def take(self, key: ShapeKey) -> int:
        """The id of the shape ``key``, held by one more timeline."""
        shape = self.ids.get(key)
        if shape is None:
            shape = self.ids[key] = self.next
            self.keys[shape], self.users[shape] = key, 0
            self.next += 1
        self.users[shape] += 1
        return shape

    def own(self) -> int:
        """A new shape for one timeline, not looked up: answers are kept for it as for any
        shape, but no other node shares them (sound whatever its usage: an id only ever
        stands for one usage over time)."""
        shape = self.next
        self.keys[shape], self.users[shape] = None, 1
        self.next += 1
        return shape

    def release(self, shape: int) -> None:
        """A timeline left this shape; forgotten once none has it."""
        left = self.users[shape] - 1
        if left:
            self.users[shape] = left
            return
        del self.users[shape]
        key = self.keys.pop(shape)
        if key is not None:
            del self.ids[key]
        self.runs.pop(shape, None)
        self.windows.pop(shape, None)


NO_ANSWERS: dict = {}  # a shape nothing was asked of yet (never written to)
