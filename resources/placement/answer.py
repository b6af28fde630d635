"""Where a job may run, and whether it can start: the one answer for a spec.

The job form (its prediction and its refusal at submit), its availability panel, /cluster/
and admission all ask these functions, so that a spec never gets two answers (SPEC J24,
J25, Q5). Placement rules come first (SPEC J10–J12): a job runs on the shared nodes, or in
the one dedicated pool it names, which its project must be allowed to use; pinned node
names pick nodes themselves (shared ones, or of pools the project may use); a driver
version keeps the nodes that have it. Capacity comes second (:mod:`resources.placement.capacity`).

Plain data in, plain data out, no ORM. The scheduler restates the capacity part on
bitmasks for speed (``jobs.scheduling.node_fit.fit``); property tests hold the two equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from resources.placement.capacity import Demand, NodeState, fit_count, shortages


@dataclass(frozen=True, slots=True, eq=False)
class SchedNode:
    """A node as placement sees it: capacity and usage now, dedicated pool and driver.

    For the scheduler, ``state``'s usage counts only what is held *outside* the running
    jobs passed alongside it (development environments...): it has no known end.
    """

    state: NodeState
    pool: int | None = None  # dedicated pool id; None = shared
    driver: int | None = None  # driver version id

    @property
    def id(self) -> int:
        return self.state.id

    @property
    def name(self) -> str:
        return self.state.name


class Rules(Protocol):
    """The placement a job asks for (a queued job, a form's draft, a /cluster/ question)."""

    pool: int | None
    allowed_pools: frozenset[int]
    node_names: frozenset[str]
    driver: int | None


@dataclass(frozen=True, slots=True)
class Where:
    """Placement rules without a job: what /cluster/ asks about each place."""

    pool: int | None = None
    allowed_pools: frozenset[int] = frozenset()
    node_names: frozenset[str] = frozenset()
    driver: int | None = None


# --- why not: small dataclasses the pages turn into words ---------------------------------


@dataclass(frozen=True, slots=True)
class Shortfall:
    """No allowed node can take one replica: on the closest one, ``resource`` is short.

    ``resource`` is one of "boards", "cpu" (millicores) or "memory" (MiB). For boards,
    ``model`` is the accelerator model and ``slices`` the slicing (a 1/``slices`` board
    when above 1).
    """

    resource: str
    need: int
    best_free: int
    node_name: str | None
    model: int | None = None
    slices: int = 1


@dataclass(frozen=True, slots=True)
class TooFewNodes:
    """Some allowed nodes can take a replica, but fewer than the job needs at once."""

    need: int
    fit: int


@dataclass(frozen=True, slots=True)
class NoAllowedNode:
    """No node satisfies a placement rule of the job.

    ``rule``: "pool-not-allowed" (the project may not use pool ``value``), "empty-pool"
    (the pool, or the shared part when ``value`` is None, has no schedulable node),
    "unknown-names" (``value``: the pinned names that do not exist), "names-elsewhere" (the
    pinned nodes are not in the job's pool), "driver" (no allowed node has driver
    ``value``), "model" (no allowed node has boards of model ``value``), "slices" (none
    slices its boards in ``value``).
    """

    rule: str
    value: object = None


@dataclass(frozen=True, slots=True)
class NeverFits:
    """The job can never start on this inventory, even with every node idle."""

    cause: Shortfall | TooFewNodes | NoAllowedNode


# --- the rules --------------------------------------------------------------------------


def allowed[N](nodes: Sequence[N], rules: Rules) -> list[N] | NoAllowedNode:
    """The nodes a job's rules let it use, or the rule that leaves none.

    ``nodes``: anything with ``name``, ``pool`` and ``driver``.
    """
    if rules.pool is not None and rules.pool not in rules.allowed_pools:
        return NoAllowedNode("pool-not-allowed", rules.pool)
    if rules.node_names:
        unknown = rules.node_names - {node.name for node in nodes}
        if unknown:
            return NoAllowedNode("unknown-names", tuple(sorted(unknown)))
        named = [node for node in nodes if node.name in rules.node_names]
        if rules.pool is not None:
            chosen = [node for node in named if node.pool == rules.pool]
            if not chosen:
                return NoAllowedNode("names-elsewhere", tuple(sorted(rules.node_names)))
        else:
            # A pinned node decides the pool (J10 is not combined with J12): its own, if
            # the project may use it.
            chosen = [
                node for node in named if node.pool is None or node.pool in rules.allowed_pools
            ]
            if not chosen:
                return NoAllowedNode("pool-not-allowed", named[0].pool)
    else:
        chosen = [node for node in nodes if node.pool == rules.pool]
        if not chosen:
            return NoAllowedNode("empty-pool", rules.pool)
    if rules.driver is not None:
        chosen = [node for node in chosen if node.driver == rules.driver]
        if not chosen:
            return NoAllowedNode("driver", rules.driver)
    return chosen


def idle(state: NodeState) -> NodeState:
    """The node with nothing running: what it could ever hold."""
    return NodeState(
        state.id, state.name, state.cpu_total, state.memory_total, state.boards,
        state.slices, state.model,
    )  # fmt: skip


def why_not(
    states: Sequence[NodeState], demand: Demand, need: int
) -> Shortfall | TooFewNodes | NoAllowedNode | None:
    """Why ``need`` replicas of ``demand`` cannot start at once on these (allowed) nodes as
    they are; None when they can."""
    total = sum(fit_count(demand, state) for state in states)
    if total >= need:
        return None
    if demand.wants_boards:
        states = [state for state in states if state.model == demand.model]
        if not states:
            return NoAllowedNode("model", demand.model)
        if demand.slice_divisor > 1:
            states = [state for state in states if state.slices == demand.slice_divisor]
            if not states:
                return NoAllowedNode("slices", demand.slice_divisor)
    if total:
        return TooFewNodes(need, total)
    return shortfall(demand, states)


# Boards matter most to people reading the reason, then CPU, then memory.
RANK = {"boards": 0, "cpu": 1, "memory": 2}


def shortfall(demand: Demand, states: Sequence[NodeState]) -> Shortfall:
    """The shortage on the node closest to taking one replica (fewest short resources)."""

    def closeness(state: NodeState) -> tuple:
        short = sorted(shortages(demand, state), key=lambda s: RANK.get(s.resource, -1))
        return (len(short), RANK.get(short[0].resource, -1), -short[0].free, state.id)

    best = min(states, key=closeness)
    top = min(shortages(demand, best), key=lambda s: RANK.get(s.resource, -1))
    return Shortfall(
        resource=top.resource,
        need=top.need,
        best_free=top.free,
        node_name=best.name,
        model=demand.model if demand.wants_boards else None,
        slices=demand.slice_divisor,
    )


# --- the two answers --------------------------------------------------------------------


def never(
    nodes: Sequence[SchedNode], rules: Rules, wants: Iterable[tuple[Demand, int]]
) -> NeverFits | None:
    """Can this ever start here? None if one of ``wants`` — (demand, replicas needed at
    once), a job's specs in order — could start on the allowed nodes all idle; else why
    the first cannot.

    Pass every node a job could ever get (the live inventory, not only what is schedulable
    now): a cordoned node comes back.
    """
    chosen = allowed(nodes, rules)
    if isinstance(chosen, NoAllowedNode):
        return NeverFits(chosen)
    states = [idle(node.state) for node in chosen]
    first = None
    for demand, need in wants:
        reason = why_not(states, demand, need)
        if reason is None:
            return None
        first = first or reason
    if first is None:
        raise ValueError("a job needs at least one node spec")
    return NeverFits(first)


def fit_now(nodes: Sequence[SchedNode], rules: Rules, demand: Demand) -> int:
    """Can it start now? How many replicas of ``demand`` the allowed nodes hold at once
    with what they hold now: a gang of up to that many starts now on free resources."""
    chosen = allowed(nodes, rules)
    if isinstance(chosen, NoAllowedNode):
        return 0
    return sum(fit_count(demand, node.state) for node in chosen)


def places(allowed_pools: Iterable[int]) -> list[Where]:
    """Where a job of a project may run without pinning nodes: the shared nodes, then each
    pool it may use."""
    pools = frozenset(allowed_pools)
    return [Where(None, pools), *(Where(pool, pools) for pool in sorted(pools))]


def elsewhere(
    nodes: Sequence[SchedNode], rules: Rules, wants: Sequence[tuple[Demand, int]]
) -> list[int | None]:
    """The other places (pool ids; None for the shared nodes) where a job that can never
    start under ``rules`` could, had it named that place instead. Pinned nodes decide
    their place themselves: nothing to suggest then."""
    if rules.node_names:
        return []
    return [
        where.pool
        for where in places(rules.allowed_pools)
        if where.pool != rules.pool
        and never(nodes, replace(where, driver=rules.driver), wants) is None
    ]
