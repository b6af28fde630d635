"""Which nodes a job may use (SPEC J10–J12), and why it cannot start when none will do.

The rules and the reasons are :mod:`resources.placement.answer`'s, which the form and /cluster/
ask too; this module applies them to the scheduler's flattened nodes and timelines. A node
is *capable* of an alternative when one replica fits on it once everything with a known
end has left.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from jobs.scheduling.data import Alternative, QueuedJob
from jobs.scheduling.node_fit import NodeInfo, fit
from jobs.scheduling.reasons import (
    HeldForQueue,
    NeverFits,
    NoAllowedNode,
    Reason,
    Shortfall,
    TooFewNodes,
)
from resources.placement import answer as placement
from resources.placement.answer import RANK

# Re-exported: shortfall_now below is property-tested against it.
from resources.placement.answer import shortfall as shortfall
from resources.placement.capacity import Demand

if TYPE_CHECKING:
    from jobs.scheduling.core import Schedule


def rule_key(job: QueuedJob) -> tuple:
    """What the placement rules depend on: jobs with the same key may use the same nodes."""
    pools = job.allowed_pools if job.node_names else None  # pinned nodes bring their pools
    return (job.pool, job.pool in job.allowed_pools, job.driver, job.node_names, pools)


def allowed(infos: Sequence[NodeInfo], job: QueuedJob) -> list[NodeInfo] | NoAllowedNode:
    """The nodes the job's pool, pinned names and driver allow (:func:`placement.allowed`,
    the rules the form and /cluster/ apply too), or the rule that leaves none."""
    return placement.allowed(infos, job)


def idle_count(demand: Demand, info: NodeInfo, base: bool) -> int:
    """Replicas that fit on the node when idle: with its base usage, or with nothing."""
    if base:
        return fit(demand, info, info.base_cpu, info.base_mem, info.base_mask)
    return fit(demand, info, 0, 0, 0)


def static_reason(
    nodes: Sequence[NodeInfo], alternative: Alternative, base: bool
) -> Shortfall | TooFewNodes | NoAllowedNode | None:
    """Why the alternative cannot start even with the allowed nodes idle (but for their
    base usage when ``base``); None if it can."""
    if base:
        states = [info.state(info.base_cpu, info.base_mem, info.base_mask) for info in nodes]
    else:
        states = [info.state(0, 0, 0) for info in nodes]
    return placement.why_not(states, alternative.demand, alternative.min_nodes)


def never_reason(infos: Sequence[NodeInfo], job: QueuedJob) -> Reason:
    """Why the job cannot start even when every job with a known end has left."""
    nodes = allowed(infos, job)
    if isinstance(nodes, NoAllowedNode):
        return NeverFits(nodes)
    reason = static_reason(nodes, job.alternatives[0], base=True)
    idle = static_reason(nodes, job.alternatives[0], base=False)
    # Held for ever by work with no known end (development environments), or never.
    return reason if idle is None else NeverFits(idle)


def wait_reason(schedule: Schedule, job: QueuedJob, alternative: Alternative) -> Reason:
    """Why the job does not start now, judged on what is free at this instant (after the
    pass's admissions); cached on the pass per rules and demand."""
    key = (rule_key(job), alternative.demand)
    cache = schedule.reasons_cache
    if key not in cache:
        # Replicas that fit now on the allowed nodes, or the closest miss when none does.
        # Nodes of one shape answer alike: each shape is asked once.
        demand, indices = alternative.demand, schedule.capable(job, alternative)[0]
        timelines = schedule.timelines
        fits: dict[int, int] = {}
        fit_now = 0
        for index in indices:
            tl = timelines[index]
            shape = tl.shape if tl.shape is not None else tl.shape_id()
            n = fits.get(shape)
            if n is None:
                n = fits[shape] = fit(demand, tl.info, tl.cpu[0], tl.mem[0], tl.mask[0])
            fit_now += n
        cache[key] = fit_now or shortfall_now(demand, [timelines[index] for index in indices])
    fit_now = cache[key]
    if isinstance(fit_now, Shortfall):
        return fit_now
    if fit_now >= alternative.min_nodes:
        return HeldForQueue()
    return TooFewNodes(alternative.min_nodes, fit_now)


def shortfall_now(demand: Demand, timelines: Sequence) -> Shortfall:
    """:func:`shortfall` on the timelines' usage now, on numbers and bitmasks: the same
    choice without building a NodeState per node (a property test holds the two equal)."""
    known: dict[tuple, tuple] = {}
    best = best_short = None
    for tl in timelines:
        info = tl.info
        usage = (info.kind, tl.cpu[0], tl.mem[0], tl.mask[0])
        answer = known.get(usage)
        if answer is None:
            short = _shortages(demand, info, tl.cpu[0], tl.mem[0], tl.mask[0])
            first = min(short, key=_rank)
            answer = known[usage] = ((len(short), _rank(first), -first[2]), first)
        closeness = (*answer[0], info.id)
        if best is None or closeness < best:
            best, best_short, best_info = closeness, answer[1], info
    resource, need, free = best_short
    return Shortfall(
        resource=resource,
        need=need,
        best_free=free,
        node_name=best_info.name,
        model=demand.model if demand.wants_boards else None,
        slices=demand.slice_divisor,
    )


def _rank(short: tuple[str, int, int]) -> int:
    return RANK.get(short[0], -1)


def _shortages(demand: Demand, info: NodeInfo, cpu: int, mem: int, mask: int) -> list[tuple]:
    """resources.placement.capacity.shortages as (resource, need, free), on a usage given as numbers
    and a slot bitmask."""
    short = []
    cpu_free, mem_free = info.cpu_total - cpu, info.mem_total - mem
    if demand.cpu > cpu_free:
        short.append(("cpu", demand.cpu, cpu_free))
    if demand.memory > mem_free:
        short.append(("memory", demand.memory, mem_free))
    if demand.wants_boards:
        used = mask & info.all_slots
        if demand.model != info.model:
            short.append(("model", 0, 0))
        elif demand.slice_divisor > 1:
            if info.slices != demand.slice_divisor:
                short.append(("slices", demand.slice_divisor, info.slices))
            elif used.bit_count() >= info.slots_total:
                short.append(("boards", 1, 0))
        else:
            free = sum(1 for board in info.board_masks if not used & board)
            if demand.boards > free:
                short.append(("boards", demand.boards, free))
    return short
