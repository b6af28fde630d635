"""The time-resource profile: per node, what is in use over time (searched in .search).

Each node has a :class:`Timeline`: sorted breakpoints cutting time into segments, with the
CPU, memory and board slots in use during each. An *item* is one replica holding resources
over ``[start, end)``: a running job's replica until its ``ends_at``, or a queued job's
reservation. Items that overlap in time on one node never share a slot, so a segment's
slots are a bitmask that adding ORs in and removing masks out.

A replica needing ``demand`` for ``duration`` fits on a node from ``t`` if it fits beside
the *window* ``[t, t + duration)``: the peak CPU and memory in use there and every slot used
at any moment of it (a replica keeps its boards, so a slot busy at any time is unusable).
Between two of its breakpoints a node's count from ``t`` can only shrink as ``t`` grows
(a later segment enters the window; nothing leaves it), and a window holding a segment too
full for one replica fits none: :meth:`Timeline.count` and :meth:`Timeline.next_room` say
how long an answer holds, so the search asks each node only a few times.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from math import inf
from typing import NamedTuple

from resources.capacity import Demand, NodeState


class NodeInfo:
    """What the search needs of one node, flattened for speed."""

    __slots__ = (
        "all_slots",
        "base_cpu",
        "base_mask",
        "base_mem",
        "board_masks",
        "boards",
        "cpu_total",
        "driver",
        "id",
        "index",
        "kind",
        "mem_total",
        "model",
        "name",
        "pool",
        "slices",
        "slots_total",
    )

    def __init__(self, index: int, state: NodeState, pool: int | None, driver: int | None):
        self.index, self.id, self.name = index, state.id, state.name
        self.pool, self.driver = pool, driver
        self.cpu_total, self.mem_total = state.cpu_total, state.memory_total
        self.boards, self.slices, self.model = state.boards, state.slices, state.model
        self.slots_total = state.boards * state.slices
        # Everything fit() reads of the node: nodes of one kind with the same usage over
        # time answer every count alike (see Shapes).
        self.kind = (self.cpu_total, self.mem_total, self.boards, self.slices, self.model)
        self.all_slots = (1 << self.slots_total) - 1
        per_board = (1 << state.slices) - 1
        self.board_masks = tuple(per_board << (p * state.slices) for p in range(state.boards))
        # Usage outside the running jobs (development environments...) has no known end.
        self.base_cpu, self.base_mem = state.cpu_used, state.memory_used
        self.base_mask = to_mask(state.used_slots)

    def shaped_for(self, demand: Demand, mask: int, given: int) -> bool:
        """Whether ``given`` slots (as ``mask``) are distinct, on this node, and the shape
        one replica of ``demand`` takes: whole boards, one slice, or none."""
        if mask.bit_count() != given or mask & ~self.all_slots:
            return False
        if demand.slice_divisor > 1:
            return given == 1
        if not demand.boards:
            return given == 0
        whole = sum(1 for board in self.board_masks if mask & board == board)
        return whole == demand.boards and whole * self.slices == given

    def state(self, cpu_used: int, mem_used: int, mask: int) -> NodeState:
        """A capacity NodeState with this usage, for resources.capacity to place on."""
        return NodeState(
            id=self.id, name=self.name, cpu_total=self.cpu_total, memory_total=self.mem_total,
            boards=self.boards, slices=self.slices, model=self.model, cpu_used=cpu_used,
            memory_used=mem_used, used_slots=from_mask(mask),
        )  # fmt: skip


def to_mask(slots: Iterable[int]) -> int:
    mask = 0
    for slot in slots:
        mask |= 1 << slot
    return mask


def from_mask(mask: int) -> set[int]:
    return {slot for slot in range(mask.bit_length()) if mask >> slot & 1}


def fit(demand: Demand, node: NodeInfo, cpu_used: int, mem_used: int, mask: int) -> int:
    """resources.capacity.fit_count on a usage given as numbers and a slot bitmask.

    The same rules, restated because the search calls it for every window it looks at and
    building a NodeState each time would dominate; a property test holds the two equal.
    """
    cpu_free = node.cpu_total - cpu_used
    mem_free = node.mem_total - mem_used
    if demand.cpu > cpu_free or demand.memory > mem_free:
        return 0
    count = min(cpu_free // max(demand.cpu, 1), mem_free // max(demand.memory, 1))
    if demand.boards or demand.slice_divisor > 1:
        if demand.model != node.model:
            return 0
        if demand.slice_divisor > 1:
            if node.slices != demand.slice_divisor:
                return 0
            return min(count, node.slots_total - (mask & node.all_slots).bit_count())
        if node.slices == 1:
            free = node.boards - (mask & node.all_slots).bit_count()
        else:
            free = sum(1 for board in node.board_masks if not mask & board)
        return min(count, free // demand.boards)
    return count


def choose(demand: Demand, node: NodeInfo, mask: int) -> tuple[int, ...]:
    """resources.capacity.choose_slots for a replica known to fit beside ``mask``.

    The same choice (lowest fully free boards; a slice on the fullest board with a free
    slot, lowest first), on the bitmask: placing every replica of a pass through a
    NodeState cost as much as searching for them. A property test holds the two equal.
    """
    if not demand.wants_boards:
        return ()
    s = node.slices
    if demand.slice_divisor > 1:
        best = best_used = -1
        for p, board in enumerate(node.board_masks):
            used = (mask & board).bit_count()
            if best_used < used < s:
                best, best_used = p, used
        free = ~mask & node.board_masks[best]
        return ((free & -free).bit_length() - 1,)
    if s == 1:  # a board is a slot: the lowest free bits
        free, chosen = ~mask & node.all_slots, []
        for _ in range(demand.boards):
            low = free & -free
            chosen.append(low.bit_length() - 1)
            free ^= low
        return tuple(chosen)
    boards = [p for p, board in enumerate(node.board_masks) if not mask & board]
    return tuple(p * s + v for p in boards[: demand.boards] for v in range(s))


class Item(NamedTuple):
    start: float
    end: float
    cpu: int
    mem: int
    mask: int
    owner: int  # job id


class Shapes:
    """Answers shared by every timeline of the same *shape*: node kind and usage over time.

    A pass has few shapes for many nodes (nodes of one kind, idle or filled alike by jobs
    ending at the same moments), and a queue asks the same few demands and durations again
    and again, so a node changing only costs a lookup of its new shape: the searches'
    questions about it are mostly answered already. Ids are per profile and never reused.
    """

    __slots__ = ("ids", "runs", "windows")

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.runs: dict[tuple, tuple[list[float], list[float]]] = {}  # (shape, demand key)
        self.windows: dict[tuple, tuple[int, float, float]] = {}  # see Timeline.window


class Timeline:
    """One node's usage over time from the pass's ``now`` on."""

    __slots__ = (
        "bounds", "cpu", "ends", "info", "items", "mask", "mem", "shape", "shapes", "times",
    )  # fmt: skip

    def __init__(self, info: NodeInfo, origin: float, shapes: Shapes | None = None):
        self.info = info
        # Segment i is [times[i], times[i + 1]); the last one runs for ever at base usage.
        self.times = [origin]
        self.cpu, self.mem, self.mask = [info.base_cpu], [info.base_mem], [info.base_mask]
        self.items: dict[object, Item] = {}
        self.ends: dict[float, list[int]] = {}  # end time -> owners ending then (blockers)
        self.bounds: dict[float, int] = {}  # breakpoint -> items starting or ending there
        self.shapes = Shapes() if shapes is None else shapes
        self.shape: int | None = None  # id in shapes; None until asked after a change

    def shape_id(self) -> int:
        if self.shape is None:
            key = (self.info.kind, tuple(self.times), tuple(self.cpu), tuple(self.mem),
                   tuple(self.mask))  # fmt: skip
            ids = self.shapes.ids
            self.shape = ids.setdefault(key, len(ids))
        return self.shape

    def _split(self, t: float) -> int:
        times = self.times
        i = bisect_left(times, t)
        if i == len(times) or times[i] != t:
            times.insert(i, t)
            self.cpu.insert(i, self.cpu[i - 1])
            self.mem.insert(i, self.mem[i - 1])
            self.mask.insert(i, self.mask[i - 1])
        return i

    def add(self, key: object, item: Item) -> None:
        cpu, mem, mask = self.cpu, self.mem, self.mask
        for k in range(self._split(item.start), self._split(item.end)):
            cpu[k] += item.cpu
            mem[k] += item.mem
            mask[k] |= item.mask
        self.items[key] = item
        self.ends.setdefault(item.end, []).append(item.owner)
        bounds = self.bounds
        bounds[item.start] = bounds.get(item.start, 0) + 1
        bounds[item.end] = bounds.get(item.end, 0) + 1
        self.shape = None

    def remove(self, key: object) -> Item:
        item = self.items.pop(key)
        self.ends[item.end].remove(item.owner)
        self.shape = None
        times, cpu, mem, mask = self.times, self.cpu, self.mem, self.mask
        first, last = bisect_left(times, item.start), bisect_left(times, item.end)
        for k in range(first, last):
            cpu[k] -= item.cpu
            mem[k] -= item.mem
            mask[k] &= ~item.mask
        # A breakpoint no item starts or ends at any more joins two equal segments: drop it.
        # (Equal neighbours alone are no reason: another item may still end there.)
        for k, t in ((last, item.end), (first, item.start)):
            self.bounds[t] -= 1
            if not self.bounds[t]:
                del self.bounds[t]
                if k:
                    del times[k], cpu[k], mem[k], mask[k]
        return item

    def view(self, t: float, duration: float) -> tuple[int, int, int]:
        """Peak CPU, peak memory and every slot used during [t, t + duration)."""
        times = self.times
        i, stop = bisect_right(times, t) - 1, bisect_left(times, t + duration)
        return max(self.cpu[i:stop]), max(self.mem[i:stop]), _union(self.mask[i:stop])

    def next_room(self, demand: Demand, key: tuple, duration: float, t: float) -> float:
        """The first start from ``t`` on whose window has room in every segment on its own.

        Any window holding a segment too full for one replica fits none, so the search
        looks only at starts inside long enough runs of roomy segments. ``key`` stands for
        the demand in the cache (hashing the dataclass costs more than the lookup).
        """
        starts, ends = self._runs(demand, key)
        for k in range(bisect_right(ends, t), len(ends)):
            start = starts[k] if starts[k] > t else t
            if start + duration <= ends[k]:
                return start
        return inf

    def first_room(self, demand: Demand, key: tuple) -> float:
        """When the node first has room for one replica, however briefly."""
        starts = self._runs(demand, key)[0]
        return starts[0] if starts else inf

    def _runs(self, demand: Demand, key: tuple) -> tuple[list[float], list[float]]:
        # The same few specs are asked about again and again until the node changes.
        shape = self.shape if self.shape is not None else self.shape_id()
        runs = self.shapes.runs.get((shape, key))
        if runs is None:
            runs = self.shapes.runs[shape, key] = self.runs(demand)
        return runs

    def window(
        self, demand: Demand, key: tuple, duration: float, t: float
    ) -> tuple[int, float, float]:
        """:meth:`count` from ``t``, skipping ahead when no window there has room.

        Returns ``(count, recheck, shrinks)`` as count does, except that a count of 0
        holds until ``recheck``, the next start with room (inf: none). Shared by shape.
        """
        shape = self.shape if self.shape is not None else self.shape_id()
        memo = self.shapes.windows
        answer = memo.get((shape, key, duration, t))
        if answer is None:
            start = self.next_room(demand, key, duration, t)
            if start > t:  # no window from t lies in room: skip to the first that does
                answer = (0, start, inf)
            else:
                n, recheck, shrinks = self.count(demand, duration, t)
                if not n:
                    recheck = self.next_room(demand, key, duration, recheck)
                answer = (n, recheck, shrinks)
            memo[shape, key, duration, t] = answer
        return answer

    def runs(self, demand: Demand) -> tuple[list[float], list[float]]:
        """Maximal runs of segments with room for one replica: (starts, ends)."""
        times, cpu, mem, mask, node = self.times, self.cpu, self.mem, self.mask, self.info
        starts: list[float] = []
        ends: list[float] = []
        # "Room for one" is fit() >= 1, written out per kind of demand: this loop runs over
        # every segment of every node a search touches after it changed.
        cpu_cap, mem_cap = node.cpu_total - demand.cpu, node.mem_total - demand.memory
        whole = demand.boards and demand.slice_divisor == 1 and node.slices == 1
        if demand.wants_boards and demand.model != node.model:
            return starts, ends
        used_cap = node.boards - demand.boards if whole else node.slots_total - 1
        all_slots, wants = node.all_slots, demand.wants_boards
        simple = whole or not wants or demand.slice_divisor == node.slices > 1
        open_at = None
        for t, used_cpu, used_mem, used in zip(times, cpu, mem, mask, strict=True):
            if simple:
                room = used_cpu <= cpu_cap and used_mem <= mem_cap
                if room and wants:
                    room = (used & all_slots).bit_count() <= used_cap
            else:
                room = fit(demand, node, used_cpu, used_mem, used) > 0
            if room:
                if open_at is None:
                    open_at = t
            elif open_at is not None:
                starts.append(open_at)
                ends.append(t)
                open_at = None
        if open_at is not None:
            starts.append(open_at)
            ends.append(inf)
        return starts, ends

    def tail(self) -> float:
        """From when on only the base usage remains."""
        return self.times[-1]

    def count(self, demand: Demand, duration: float, t: float) -> tuple[int, float, float]:
        """Replicas that fit from ``t`` for ``duration``, and until when that holds.

        Returns ``(count, recheck, shrinks)``: the count holds until the next breakpoint
        ``recheck`` (where it may grow), and may only shrink for starts after ``shrinks``
        (when the next segment enters the window). A count of 0 holds until ``recheck``.
        """
        times, cpu, mem, mask, node = self.times, self.cpu, self.mem, self.mask, self.info
        last = len(times) - 1
        i = j = bisect_right(times, t) - 1
        end = t + duration
        peak_cpu = peak_mem = used = 0
        while True:
            if cpu[j] > peak_cpu:
                peak_cpu = cpu[j]
            if mem[j] > peak_mem:
                peak_mem = mem[j]
            used |= mask[j]
            if j == last or times[j + 1] >= end:
                break
            j += 1
        n = fit(demand, node, peak_cpu, peak_mem, used)
        if n:
            shrinks = times[j + 1] - duration if j < last else inf
            return n, times[i + 1] if i < last else inf, shrinks
        # A segment full on its own blocks every start until it ends; otherwise only the
        # window's union blocks, which changes when its first segment ends.
        for k in range(i, j + 1):
            if not fit(demand, node, cpu[k], mem[k], mask[k]):
                return 0, times[k + 1] if k < last else inf, inf
        return 0, times[i + 1], inf


def _union(masks: list[int]) -> int:
    used = 0
    for mask in masks:
        used |= mask
    return used


class Profile:
    """Every node's timeline from ``origin`` on, and what searches learnt about them.

    Searches for the same nodes and demand recur all through a queue; so each such group
    (:class:`~.groups.Group`) is kept, and follows the nodes that changed since its last
    search through ``changes``: the index of each node something was added to, ``~index``
    of each node something left.
    """

    def __init__(self, infos: list[NodeInfo], origin: float):
        self.origin = origin
        self.shapes = Shapes()
        self.timelines = [Timeline(info, origin, self.shapes) for info in infos]
        self.changes: list[int] = []
        self.groups: dict[object, object] = {}

    def add(self, index: int, key: object, item: Item) -> None:
        self.timelines[index].add(key, item)
        self.changes.append(index)

    def remove(self, index: int, key: object) -> Item:
        self.changes.append(~index)
        return self.timelines[index].remove(key)


def demand_key(demand: Demand) -> tuple:
    return (demand.cpu, demand.memory, demand.boards, demand.slice_divisor, demand.model)
