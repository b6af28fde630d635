"""One node's usage over time, the profile's part per node (.profile; searched in .search).

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
from math import inf
from typing import NamedTuple

from jobs.scheduling.columns import from_columns, to_columns
from jobs.scheduling.node_fit import NodeInfo, fit
from jobs.scheduling.shapes import ShapeKey, Shapes
from resources.placement.capacity import Demand

# Timelines with more segments than this get a shape of their own, without looking for
# another node of the same (see Shapes.own): long ones rarely match, and making the key of
# every segment after each booking cost more the longer the queue.
SHARED_UP_TO = 16
# Items removed one by one up to this many at once; past it, the segments are made again
# from the items left (Timeline.remove_all).
FEW = 4


class Item(NamedTuple):
    start: float
    end: float
    cpu: int
    mem: int
    mask: int
    owner: int  # job id


class Timeline:
    """One node's usage over time from the pass's ``now`` on."""

    __slots__ = (
        "bounds", "cpu", "ends", "info", "items", "mask", "mem", "room", "shape", "shapes",
        "times",
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
        # demand key -> (demand, run starts, run ends): this node's runs of room (see runs)
        # for each demand asked about, kept up to date by add and remove. A booking changes
        # a few segments; working the runs out again over the whole timeline each time
        # would cost more the longer the queue (the pass would grow faster than its queue).
        self.room: dict[tuple, tuple[Demand, list[float], list[float]]] = {}

    def __getstate__(self) -> tuple:
        # Stored with the plan (jobs.admission.plans) as columns of numbers (.columns):
        # a long queue's plan holds tens of thousands of items, and pickled one by one they
        # were half of a pass's publishing. What follows from the items (``ends``,
        # ``bounds``) is made again from them; the kept runs of room, asked again.
        return self.info, self.shape, self.shapes, to_columns(self)

    def __setstate__(self, state: tuple) -> None:
        self.info, self.shape, self.shapes, columns = state
        self.times, self.cpu, self.mem, self.mask, self.items = from_columns(columns, Item)
        self.ends, self.bounds, self.room = {}, {}, {}
        for item in self.items.values():
            self.ends.setdefault(item.end, []).append(item.owner)
            self.bounds[item.start] = self.bounds.get(item.start, 0) + 1
            self.bounds[item.end] = self.bounds.get(item.end, 0) + 1

    def shape_id(self) -> int:
        if self.shape is None:
            if len(self.times) > SHARED_UP_TO:
                self.shape = self.shapes.own()
            else:
                key = (self.info.kind, tuple(self.times), tuple(self.cpu), tuple(self.mem),
                       tuple(self.mask))  # fmt: skip
                self.shape = self.shapes.take(ShapeKey(key))
        return self.shape

    def _changed(self) -> None:
        if self.shape is not None:
            self.shapes.release(self.shape)
            self.shape = None

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
        self._hold(key, item)
        self._changed()
        self._respan(item.start, item.end)

    def _hold(self, key: object, item: Item) -> None:
        """An item added: kept, with its end (blockers) and its two breakpoints."""
        self.items[key] = item
        self.ends.setdefault(item.end, []).append(item.owner)
        bounds = self.bounds
        bounds[item.start] = bounds.get(item.start, 0) + 1
        bounds[item.end] = bounds.get(item.end, 0) + 1

    def install(self, times, cpu, mem, mask, items: list[tuple[object, Item]]) -> None:
        """Take segments worked out elsewhere (jobs.scheduling.rebook) with these items
        added: what add would have made of them one by one."""
        self.times, self.cpu, self.mem, self.mask = times, cpu, mem, mask
        for key, item in items:
            self._hold(key, item)
        self._changed()
        self.room.clear()  # the runs of room are worked out again when next asked

    def remove(self, key: object) -> Item:
        item = self.items.pop(key)
        self.ends[item.end].remove(item.owner)
        self._changed()
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
        self._respan(item.start, item.end)
        return item

    def remove_all(self, keys: list) -> list[Item]:
        """Remove the items of ``keys``: more than FEW at once, the segments made again from
        the items left. (An urgent submit lifts most of every node's items out; one by one,
        each removal walked every segment its item spans.)"""
        if len(keys) <= FEW:
            return [self.remove(key) for key in keys]
        items, ends, bounds = self.items, self.ends, self.bounds
        gone = [items.pop(key) for key in keys]
        for item in gone:
            ends[item.end].remove(item.owner)
            for t in (item.start, item.end):
                left = bounds[t] - 1
                if left:
                    bounds[t] = left
                else:
                    del bounds[t]
        self._changed()
        self._segments()
        self.room.clear()  # the runs of room are worked out again when next asked
        return gone

    def _segments(self) -> None:
        """The segments made from the items: a breakpoint where one starts or ends, the
        usage of those covering each segment added up (items that overlap share no slot,
        so their masks add up to their union)."""
        info, origin = self.info, self.times[0]
        times = sorted(self.bounds.keys() | {origin})
        at = {t: i for i, t in enumerate(times)}
        n = len(times)
        cpu, mem, mask = [0] * (n + 1), [0] * (n + 1), [0] * (n + 1)
        for item in self.items.values():
            i, j = at[item.start], at[item.end]
            cpu[i] += item.cpu
            cpu[j] -= item.cpu
            mem[i] += item.mem
            mem[j] -= item.mem
            mask[i] += item.mask
            mask[j] -= item.mask
        c, m, k = info.base_cpu, info.base_mem, 0
        for i in range(n):
            c += cpu[i]
            m += mem[i]
            k += mask[i]
            cpu[i], mem[i], mask[i] = c, m, k | info.base_mask
        del cpu[n], mem[n], mask[n]
        self.times, self.cpu, self.mem, self.mask = times, cpu, mem, mask

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

    def runs_over(self, demand: Demand, key: tuple, lo: float, hi: float):
        """The runs of room for one replica (kept, see :meth:`runs`) that overlap [lo, hi),
        each as (start, end), whole."""
        starts, ends = self._runs(demand, key)
        for k in range(bisect_right(ends, lo), len(starts)):
            if starts[k] >= hi:
                break
            yield starts[k], ends[k]

    def _runs(self, demand: Demand, key: tuple) -> tuple[list[float], list[float]]:
        kept = self.room.get(key)
        if kept is not None:
            return kept[1], kept[2]
        # Asked first: nodes of one shape share the answer (a thousand idle nodes, one
        # computation), and from then on this node keeps its own copy up to date.
        shape = self.shape if self.shape is not None else self.shape_id()
        shared = self.shapes.runs.setdefault(shape, {})
        runs = shared.get(key)
        if runs is None:
            runs = shared[key] = self.runs(demand)
        starts, ends = list(runs[0]), list(runs[1])
        self.room[key] = (demand, starts, ends)
        return starts, ends

    def _respan(self, lo: float, hi: float) -> None:
        """Bring the kept runs up to date after room changed in [lo, hi) only.

        Only [lo, hi) is worked out again; the runs that overlap or touch it keep their
        parts outside it, which did not change, joined to the new runs where one starts at
        ``lo`` or ends at ``hi``. (Working the touching runs out again whole cost a scan of
        every segment of a long run of room, per booking and per demand kept.)"""
        for demand, starts, ends in self.room.values():
            first, last = bisect_left(ends, lo), bisect_right(starts, hi)
            new_starts, new_ends = self.runs(demand, lo, hi)
            if first < last:
                if starts[first] < lo:  # a run reaching lo from before keeps that part
                    if new_starts and new_starts[0] == lo:
                        new_starts[0] = starts[first]
                    else:
                        new_starts.insert(0, starts[first])
                        new_ends.insert(0, lo)
                if ends[last - 1] > hi:  # and one going on after hi
                    if new_ends and new_ends[-1] == hi:
                        new_ends[-1] = ends[last - 1]
                    else:
                        new_starts.append(hi)
                        new_ends.append(ends[last - 1])
            starts[first:last], ends[first:last] = new_starts, new_ends

    def window(
        self, demand: Demand, key: tuple, duration: float, t: float
    ) -> tuple[int, float, float]:
        """:meth:`count` from ``t``, skipping ahead when no window there has room.

        Returns ``(count, recheck, shrinks)`` as count does, except that a count of 0
        holds until ``recheck``, the next start with room (inf: none). Shared by shape.
        """
        shape = self.shape if self.shape is not None else self.shape_id()
        memo = self.shapes.windows.get(shape)
        if memo is None:
            memo = self.shapes.windows[shape] = {}
        answer = memo.get((key, duration, t))
        if answer is None:
            start = self.next_room(demand, key, duration, t)
            if start > t:  # no window from t lies in room: skip to the first that does
                answer = (0, start, inf)
            else:
                n, recheck, shrinks = self.count(demand, duration, t)
                if not n:
                    recheck = self.next_room(demand, key, duration, recheck)
                answer = (n, recheck, shrinks)
            memo[key, duration, t] = answer
        return answer

    def runs(
        self, demand: Demand, begin: float = -inf, stop: float = inf
    ) -> tuple[list[float], list[float]]:
        """Maximal runs of segments with room for one replica: (starts, ends); only those
        within [begin, stop) when given (cut there)."""
        times, cpu, mem, mask, node = self.times, self.cpu, self.mem, self.mask, self.info
        first = max(bisect_right(times, begin) - 1, 0)
        last = len(times) if stop == inf else bisect_left(times, stop)
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
        for i in range(first, last):
            t, used_cpu, used_mem, used = times[i], cpu[i], mem[i], mask[i]
            if simple:
                room = used_cpu <= cpu_cap and used_mem <= mem_cap
                if room and wants:
                    room = (used & all_slots).bit_count() <= used_cap
            else:
                room = fit(demand, node, used_cpu, used_mem, used) > 0
            if room:
                if open_at is None:
                    open_at = max(t, begin)
            elif open_at is not None:
                starts.append(open_at)
                ends.append(t)
                open_at = None
        if open_at is not None:
            starts.append(open_at)
            ends.append(stop)
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
