"""Pure capacity arithmetic: does one node of a spec fit on a node, and where.

Plain data in, plain data out, no ORM: availability pages and the scheduler share it.
Units are exact integers: CPU in millicores, memory in MiB, boards as *slots* — a node with
``slices_per_board = s`` has ``boards * s`` slots, slot ``p * s + v`` being virtual board
``v`` of physical board ``p``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Demand:
    """What one replica (one node of a job) needs."""

    cpu: int
    memory: int
    boards: int = 0  # whole boards
    slice_divisor: int = 1  # 2, 4 or 8: one virtual slice of a board sliced that way
    model: int | None = None  # accelerator model id; None for CPU-only

    @property
    def wants_boards(self) -> bool:
        return self.boards > 0 or self.slice_divisor > 1


@dataclass(frozen=True, slots=True)
class Shortage:
    resource: str  # "cpu", "memory", "boards", "model", "slices"
    need: int
    free: int


@dataclass(slots=True)
class NodeState:
    """A node's capacity and what is in use now. Mutable: ``take`` books a replica."""

    id: int
    name: str
    cpu_total: int
    memory_total: int
    boards: int = 0
    slices: int = 1
    model: int | None = None
    cpu_used: int = 0
    memory_used: int = 0
    used_slots: set[int] = field(default_factory=set)
    # (free boards, free slots), computed once per change of used_slots: availability asks
    # every spec about every node, so this is the hot path.
    _free: tuple[list[int], list[int]] | None = field(default=None, repr=False, compare=False)

    @property
    def cpu_free(self) -> int:
        return self.cpu_total - self.cpu_used

    @property
    def memory_free(self) -> int:
        return self.memory_total - self.memory_used

    @property
    def slots_total(self) -> int:
        return self.boards * self.slices

    def _compute_free(self) -> tuple[list[int], list[int]]:
        if self._free is None:
            s, used = self.slices, self.used_slots
            if not used:  # the common case in a pass over idle nodes: everything is free
                boards = list(range(self.boards))
                slots = boards if s == 1 else list(range(self.slots_total))
            elif s == 1:
                boards = slots = [p for p in range(self.boards) if p not in used]
            else:
                boards = [
                    p for p in range(self.boards) if not any(p * s + v in used for v in range(s))
                ]
                slots = [slot for slot in range(self.slots_total) if slot not in used]
            self._free = (boards, slots)
        return self._free

    def free_boards(self) -> list[int]:
        """Physical boards with every slice free (what a whole-board demand can take)."""
        return self._compute_free()[0]

    def free_slots(self) -> list[int]:
        return self._compute_free()[1]

    def boards_in_use(self) -> float:
        """Boards in use, counting a virtual slice as its fraction of a board."""
        return len(self.used_slots) / self.slices if self.slices else 0


def shortages(demand: Demand, node: NodeState) -> list[Shortage]:
    """Why one replica of ``demand`` does not fit on ``node`` now; empty when it fits."""
    short = []
    if demand.cpu > node.cpu_free:
        short.append(Shortage("cpu", demand.cpu, node.cpu_free))
    if demand.memory > node.memory_free:
        short.append(Shortage("memory", demand.memory, node.memory_free))
    if demand.wants_boards:
        if demand.model != node.model:
            short.append(Shortage("model", 0, 0))
        elif demand.slice_divisor > 1:
            if node.slices != demand.slice_divisor:
                short.append(Shortage("slices", demand.slice_divisor, node.slices))
            elif not node.free_slots():
                short.append(Shortage("boards", 1, 0))
        else:
            free = len(node.free_boards())
            if demand.boards > free:
                short.append(Shortage("boards", demand.boards, free))
    return short


def fits(demand: Demand, node: NodeState) -> bool:
    return not shortages(demand, node)


def fit_count(demand: Demand, node: NodeState) -> int:
    """How many replicas of ``demand`` fit on ``node`` at once, as it is now.

    The same rules as :func:`shortages`, written out flat: availability asks it of every
    spec on every node.
    """
    cpu_free = node.cpu_total - node.cpu_used
    memory_free = node.memory_total - node.memory_used
    if demand.cpu > cpu_free or demand.memory > memory_free:
        return 0
    count = min(cpu_free // max(demand.cpu, 1), memory_free // max(demand.memory, 1))
    if demand.boards or demand.slice_divisor > 1:
        if demand.model != node.model:
            return 0
        if demand.slice_divisor > 1:
            if node.slices != demand.slice_divisor:
                return 0
            return min(count, len(node.free_slots()))
        return min(count, len(node.free_boards()) // demand.boards)
    return count


def choose_slots(demand: Demand, node: NodeState) -> list[int] | None:
    """The slots one replica would take, or None if it does not fit.

    Whole boards: the lowest fully free boards. A slice: a free slot on the fullest board
    that has one, so that whole boards stay free for whole-board demands.
    """
    if shortages(demand, node):
        return None
    if not demand.wants_boards:
        return []
    s = node.slices
    if demand.slice_divisor > 1:
        used_per_board = {}
        for slot in node.used_slots:
            used_per_board[slot // s] = used_per_board.get(slot // s, 0) + 1
        best = max(
            (slot for slot in node.free_slots()),
            key=lambda slot: (used_per_board.get(slot // s, 0), -slot),
        )
        return [best]
    boards = node.free_boards()[: demand.boards]
    return [p * s + v for p in boards for v in range(s)]


def take(demand: Demand, node: NodeState) -> list[int] | None:
    """Book one replica on ``node``; returns its slots, or None (nothing booked)."""
    slots = choose_slots(demand, node)
    if slots is None:
        return None
    node.cpu_used += demand.cpu
    node.memory_used += demand.memory
    node.used_slots.update(slots)
    node._free = None
    return slots


def slot_label(slot: int, slices: int) -> str:
    """``physical(virtual)`` as the availability table shows it (SPEC J25)."""
    return f"{slot // slices}({slot % slices})"
