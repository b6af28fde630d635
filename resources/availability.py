"""The availability table of SPEC J25 and the "fits now" summary, for the chosen specs.

A fixed number of queries whatever the number of nodes. Capacity and fit are computed for
every node from plain values; names, usage and reasons only for the rows on screen.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Q
from django.utils.translation import gettext as _

from resources import hooks
from resources.capacity import Demand, NodeState, Shortage, fit_count, shortages, slot_label
from resources.models import AcceleratorModel, Allocation, Node, NodeSpec, ResourcePool

IDLE = "idle"
TIGHT = "tight"


def demand_of(spec: NodeSpec) -> Demand:
    whole = int(spec.boards) if spec.boards >= 1 else 0
    return Demand(
        cpu=spec.cpu_millicores,
        memory=spec.memory_mib,
        boards=whole,
        slice_divisor=spec.slice_divisor,
        model=spec.accelerator_model_id,
    )


def describe(shortage: Shortage, spec: NodeSpec) -> str:
    if shortage.resource == "cpu":
        return _("CPU: needs %(need)s, %(free)s free") % {
            "need": f"{shortage.need / 1000:g}", "free": f"{shortage.free / 1000:g}"
        }  # fmt: skip
    if shortage.resource == "memory":
        return _("memory: needs %(need)s GiB, %(free)s free") % {
            "need": f"{shortage.need / 1024:g}", "free": f"{shortage.free / 1024:g}"
        }  # fmt: skip
    if shortage.resource == "model":
        return _("no %(model)s boards") % {"model": spec.accelerator_model}
    if shortage.resource == "slices":
        return _("boards not sliced in %(n)s") % {"n": shortage.need}
    return _("%(model)s: needs %(need)s, %(free)s free") % {
        "model": spec.accelerator_model, "need": f"{spec.boards.normalize():f}",
        "free": shortage.free,
    }  # fmt: skip


@dataclass
class NodeRow:
    state: NodeState
    status: str = TIGHT
    fitting: list[NodeSpec] = field(default_factory=list)
    # Filled in by describe_rows() for the rows on screen only:
    node: Node | None = None
    short: list[str] = field(default_factory=list)
    usage: list[str] = field(default_factory=list)


@dataclass
class SpecSummary:
    spec: NodeSpec
    nodes: int  # nodes where at least one node of the spec can start now
    largest_job: int  # most nodes of this spec one gang job could get now


@dataclass
class Availability:
    rows: list[NodeRow]
    chosen: list[NodeSpec]
    specs: list[NodeSpec]
    summaries: list[SpecSummary]
    models: list[AcceleratorModel]
    demand: dict[int, float]


def visible_nodes(user, project, nodes=None):
    """Schedulable nodes a user may run on (of ``nodes``, if given): shared ones, and those
    of pools their current project may use. Platform admins see every pool."""
    nodes = Node.objects.schedulable() if nodes is None else nodes
    if user.is_staff:
        return nodes
    if project is None:
        return nodes.filter(pool__isnull=True)
    allowed = ResourcePool.objects.filter(projects=project).values("pk")
    return nodes.filter(Q(pool__isnull=True) | Q(pool__in=allowed))


NODE_FIELDS = (
    "pk", "name", "cpu_millicores", "memory_mib", "board_count", "slices_per_board",
    "accelerator_model_id",
)  # fmt: skip


def compute(user, project, *, spec_ids=(), model_ids=()) -> Availability:
    models = list(AcceleratorModel.objects.live())
    specs = list(NodeSpec.objects.live().select_related("accelerator_model"))
    if model_ids:
        specs = [spec for spec in specs if spec.accelerator_model_id in set(model_ids)]
    chosen = [spec for spec in specs if spec.pk in set(spec_ids)] or specs
    nodes = visible_nodes(user, project)
    if model_ids:
        nodes = nodes.filter(accelerator_model__in=model_ids)
    states = {
        pk: NodeState(pk, name, cpu, memory, boards, slices, model)
        for pk, name, cpu, memory, boards, slices, model in nodes.values_list(*NODE_FIELDS)
    }
    for node_id, cpu, memory, slots in (
        Allocation.objects.live()
        .filter(node__in=nodes)
        .values_list("node_id", "cpu_millicores", "memory_mib", "slots")
    ):
        state = states[node_id]
        state.cpu_used += cpu
        state.memory_used += memory
        state.used_slots.update(slots)
    # A node is only asked about specs of its own accelerator model (or CPU-only ones).
    by_model: dict[int | None, list[tuple[NodeSpec, Demand]]] = defaultdict(list)
    for spec in specs:
        by_model[spec.accelerator_model_id].append((spec, demand_of(spec)))
    chosen_ids = {spec.pk for spec in chosen}
    totals: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    rows = []
    for state in states.values():
        row = NodeRow(state=state)
        candidates = by_model[None] + (by_model[state.model] if state.model else [])
        for spec, demand in candidates:
            count = fit_count(demand, state)
            if count:
                row.fitting.append(spec)
                totals[spec.pk][0] += 1
                totals[spec.pk][1] += count
                if spec.pk in chosen_ids:
                    row.status = IDLE
        rows.append(row)
    rows.sort(key=lambda row: (row.status != IDLE, row.state.name))
    return Availability(
        rows=rows,
        chosen=chosen,
        specs=specs,
        summaries=[SpecSummary(spec, *totals[spec.pk]) for spec in chosen],
        models=models,
        demand=hooks.queued_demand(),
    )


def describe_rows(rows: list[NodeRow], chosen: list[NodeSpec]) -> None:
    """Attach the node, its usage and the reasons it is tight to the rows on screen."""
    by_id = {row.state.id: row for row in rows}
    for node in Node.objects.filter(pk__in=by_id).select_related(
        "accelerator_model", "driver_version", "pool"
    ):
        by_id[node.pk].node = node
    for node_id, slots, label in (
        Allocation.objects.live().filter(node_id__in=by_id).values_list("node_id", "slots", "label")
    ):
        row = by_id[node_id]
        row.usage.extend(f"{slot_label(slot, row.state.slices)}:{label}" for slot in slots)
    for row in rows:
        row.usage.sort()
        if row.status == TIGHT:
            for spec in chosen[:3]:
                demand = demand_of(spec)
                lack = shortages(demand, row.state)
                row.short.append(f"{spec.name}: " + "; ".join(describe(s, spec) for s in lack))
