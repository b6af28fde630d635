"""Whether a draft could ever start, before Create (SPEC J24, J25, F4, G1): on this
inventory at all, under its team's quota maximums, and after a fault in a resume pool.

/cluster/ and the form's availability panel give the same "never" answer
(:mod:`resources.placement.answer`)."""

from __future__ import annotations

from typing import NamedTuple

from django.utils.translation import ngettext

from console import limits
from jobs.admission.caps import beyond_maximum
from jobs.admission.plans import Plan
from jobs.admission.state import sched_nodes
from jobs.admission.words import Names, quota_text, why_never
from jobs.scheduling import never_fits
from jobs.scheduling.data import QueuedJob, SchedNode
from resources.models import Node, ResourcePool
from resources.placement import answer as placement
from resources.placement.words import elsewhere_text


def whole_inventory() -> list[SchedNode]:
    """Every live node, idle: what a job could ever run on."""
    return sched_nodes(Node.objects.live())


class Refusal(NamedTuple):
    """Why a draft could never start, and where it could instead ("" if nowhere)."""

    text: str
    hint: str


def refusal(draft: QueuedJob, plan: Plan | None = None) -> Refusal | None:
    """Why the draft could never start on this inventory, in words, with the other places
    its project may use where it could; None if it could start as it is. Given a plan that
    holds, the inventory and the answer are the plan's (kept with it while it holds).

    /cluster/ and the form's availability panel give the same answer
    (:mod:`resources.placement.answer`)."""
    over = beyond_maximum(draft)
    if over is not None:
        return Refusal(quota_text(over, Names(), lead=False), "")
    memo = plan.memo if plan is not None and plan.holds else None
    if memo is None:
        nodes = whole_inventory()
    else:
        nodes = memo.get("inventory")
        if nodes is None:
            nodes = memo["inventory"] = whole_inventory()
    reason = never_fits(nodes, draft, memo)
    if reason is None:
        return None
    names = Names()
    wants = [(alternative.demand, alternative.min_nodes) for alternative in draft.alternatives]
    hint = elsewhere_text(placement.elsewhere(nodes, draft, wants), names)
    return Refusal(why_never(reason, names), hint)


def resume_caveat(draft: QueuedJob) -> str | None:
    """Checkpoint resume moves a job to other nodes of its dedicated pool after a fault
    (SPEC F4): when the loss of one of the pool's nodes would leave no room there for the
    job, say so before Create. None when any one node can fail and the job still fits."""
    if draft.pool is None:
        return None
    nodes = whole_inventory()
    for node in nodes:
        if node.pool == draft.pool and never_fits([n for n in nodes if n.id != node.id], draft):
            pool = ResourcePool.objects.filter(pk=draft.pool).values_list("name", flat=True)
            minutes = limits.current().resubmit_queue_timeout_minutes
            return ngettext(
                "If %(node)s fails, pool %(pool)s has no other node with room for this job: "
                "it could not resume there, and would wait until the resubmission timeout "
                "(%(n)s minute) ends it. Choose a pool with more nodes, or fewer nodes.",
                "If %(node)s fails, pool %(pool)s has no other node with room for this job: "
                "it could not resume there, and would wait until the resubmission timeout "
                "(%(n)s minutes) ends it. Choose a pool with more nodes, or fewer nodes.",
                minutes,
            ) % {"node": node.name, "pool": pool.first() or "", "n": minutes}
    return None
