"""One node as the search sees it: its facts flattened for speed, its board slots as bit masks,
and how many replicas of a demand fit on it beside what it already holds."""

from __future__ import annotations

from collections.abc import Iterable

from resources.placement.capacity import Demand, NodeState


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
        """A capacity NodeState with this usage, for resources.placement.capacity to place on."""
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
    """resources.placement.capacity.fit_count on a usage given as numbers and a slot bitmask.

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
    """resources.placement.capacity.choose_slots for a replica known to fit beside ``mask``.

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
