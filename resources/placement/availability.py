"""The availability table of SPEC J25 and the "fits now" summary, for the chosen specs.

A fixed number of queries whatever the number of nodes. Capacity and fit are computed for
every node from plain values; names, usage and reasons only for the rows on screen. Whether
a spec can start (ever, now) is :mod:`resources.placement.answer`'s answer, per place a job may
run: the form, its panel, /cluster/ and admission never disagree about a spec.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Q
from django.utils.translation import gettext as _

from resources import hooks
from resources.models import AcceleratorModel, Allocation, Node, NodeSpec, ResourcePool
from resources.placement import answer
from resources.placement.capacity import (
    Demand,
    NodeState,
    Shortage,
    fit_count,
    shortages,
    slot_label,
)
from resources.placement.words import Names, elsewhere_text, never_text

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
class PlaceAnswer:
    """One spec in one place a job may run (the shared nodes, a pool, the pinned nodes)."""

    where: answer.Where
    pool: ResourcePool | None
    never: str  # why a job could never start here, in words; "" if it could
    now: int  # replicas that fit at once now: a gang of up to this many starts now
    nodes: int  # machines with room for at least one replica now
    need: int = 1  # replicas the job needs at once
    hints: list[str] = field(default_factory=list)  # where it could start instead

    @property
    def starts_now(self) -> bool:
        return not self.never and self.now >= self.need


@dataclass
class SpecSummary:
    spec: NodeSpec
    answers: list[PlaceAnswer]
    # The job form's panel only: what the prediction (queue included) says of a job of this
    # spec submitted now: "now", "queue" (and why), or None (not asked).
    submitted: str | None = None
    submitted_why: str = ""

    @property
    def largest_job(self) -> int:
        """Most nodes of this spec one gang job could get now, in any one place."""
        return max((a.now for a in self.answers if not a.never), default=0)

    @property
    def never(self) -> bool:
        return all(a.never for a in self.answers)


@dataclass
class Availability:
    rows: list[NodeRow]
    chosen: list[NodeSpec]
    specs: list[NodeSpec]
    summaries: list[SpecSummary]
    models: list[AcceleratorModel]
    demand: dict[int, float]


def visible_nodes(user, project, nodes=None):
    """Schedulable nodes a user may see (of ``nodes``, if given): shared ones, and those
    of pools their current project may use. Platform admins see every pool."""
    nodes = Node.objects.schedulable() if nodes is None else nodes
    if user.is_staff:
        return nodes
    return usable_nodes(project, nodes)


def usable_nodes(project, nodes=None):
    """Schedulable nodes a job of ``project`` may run on (of ``nodes``, if given): the
    shared ones and those of the pools the project may use — admins' jobs included."""
    nodes = Node.objects.schedulable() if nodes is None else nodes
    if project is None:
        return nodes.filter(pool__isnull=True)
    allowed = ResourcePool.objects.filter(projects=project).values("pk")
    return nodes.filter(Q(pool__isnull=True) | Q(pool__in=allowed))


def project_pools(project) -> frozenset[int]:
    """The pools a job of ``project`` may name (SPEC J12)."""
    if project is None:
        return frozenset()
    return frozenset(project.pools.values_list("pk", flat=True))


NODE_FIELDS = (
    "pk", "name", "cpu_millicores", "memory_mib", "board_count", "slices_per_board",
    "accelerator_model_id", "pool_id", "driver_version_id", "status", "cordoned",
)  # fmt: skip


def load_nodes() -> tuple[list[answer.SchedNode], list[answer.SchedNode]]:
    """Every live node (what a job could ever get) and, of those, the schedulable ones
    with what they hold now (what it could get now). Two queries."""
    live, schedulable = [], {}
    for (
        pk,
        name,
        cpu,
        memory,
        boards,
        slices,
        model,
        pool,
        driver,
        status,
        cordoned,
    ) in Node.objects.live().values_list(*NODE_FIELDS):
        node = answer.SchedNode(
            NodeState(pk, name, cpu, memory, boards, slices, model), pool, driver
        )
        live.append(node)
        if status == Node.Status.READY and not cordoned:
            schedulable[pk] = node
    for node_id, cpu, memory, slots in (
        Allocation.objects.live()
        .filter(node_id__in=schedulable)
        .values_list("node_id", "cpu_millicores", "memory_mib", "slots")
    ):
        state = schedulable[node_id].state
        state.cpu_used += cpu
        state.memory_used += memory
        state.used_slots.update(slots)
    return live, list(schedulable.values())


def compute(
    user,
    project,
    *,
    spec_ids=(),
    model_ids=(),
    rules: answer.Rules | None = None,
    need: int = 1,
) -> Availability:
    """The table and the per-spec answers for the chosen specs (all, if none is chosen).

    Without ``rules`` (/cluster/): every node the user may see, and each spec answered in
    each place their project's jobs may run. With ``rules`` (the job form's panel): the
    nodes those rules allow, and each spec answered there for ``need`` nodes at once. The
    answers are :mod:`resources.placement.answer`'s, the same as the form's and admission's.
    """
    models = list(AcceleratorModel.objects.live())
    specs, chosen = _specs(spec_ids, model_ids)
    live, now = load_nodes()
    places, shown = _places_and_shown(user, project_pools(project), now, rules)
    if model_ids:
        shown = [n for n in shown if n.state.model in set(model_ids)]
    rows = _rows([n.state for n in shown], specs, chosen)
    names = Names()
    pool_objects = ResourcePool.objects.in_bulk([w.pool for w in places if w.pool])
    with_hints = rules is not None  # the form's panel: where it could start instead
    summaries = []
    for spec in chosen:
        demand = demand_of(spec)
        answers = [
            _answer(where, pool_objects.get(where.pool), demand, need, live, now, names, with_hints)
            for where in places
        ]
        summaries.append(SpecSummary(spec, answers))
    return Availability(
        rows=rows,
        chosen=chosen,
        specs=specs,
        summaries=summaries,
        models=models,
        demand=hooks.queued_demand(),
    )


def _specs(spec_ids, model_ids) -> tuple[list[NodeSpec], list[NodeSpec]]:
    """The live specs (of these accelerator models, if any are given), and the chosen ones
    among them (all, if none is chosen)."""
    specs = list(NodeSpec.objects.live().select_related("accelerator_model"))
    if model_ids:
        specs = [spec for spec in specs if spec.accelerator_model_id in set(model_ids)]
    chosen = [spec for spec in specs if spec.pk in set(spec_ids)] or specs
    return specs, chosen


def _places_and_shown(user, pools: frozenset[int], now, rules: answer.Rules | None):
    """Where the specs are answered, and the nodes the table shows. Without ``rules``: each
    place the project's jobs may run, and every node the user may see; with them: those
    rules' one place and the nodes they allow."""
    if rules is None:
        places = answer.places(pools)
        shown = [n for n in now if user.is_staff or n.pool is None or n.pool in pools]
    else:
        places = [rules]
        allowed = answer.allowed(now, rules)
        shown = [] if isinstance(allowed, answer.NoAllowedNode) else allowed
    return places, shown


def _answer(where, pool, demand: Demand, need: int, live, now, names: Names, with_hints: bool):
    """One spec in one place: whether a job could ever start there, how many replicas fit
    now and on how many nodes, and (``with_hints``) where it could start instead."""
    never = answer.never(live, where, [(demand, need)])
    usable = answer.allowed(now, where)
    usable = [] if isinstance(usable, answer.NoAllowedNode) else usable
    counts = [fit_count(demand, node.state) for node in usable]
    hints = []
    if never and with_hints:
        hints.append(elsewhere_text(answer.elsewhere(live, where, [(demand, need)]), names))
    return PlaceAnswer(
        where=where,
        pool=pool,
        never=never_text(never, names) if never else "",
        now=sum(counts),
        nodes=sum(1 for count in counts if count),
        need=need,
        hints=[hint for hint in hints if hint],
    )


def _rows(states: list[NodeState], specs: list[NodeSpec], chosen: list[NodeSpec]) -> list[NodeRow]:
    # A node is only asked about specs of its own accelerator model (or CPU-only ones).
    by_model: dict[int | None, list[tuple[NodeSpec, Demand]]] = defaultdict(list)
    for spec in specs:
        by_model[spec.accelerator_model_id].append((spec, demand_of(spec)))
    chosen_ids = {spec.pk for spec in chosen}
    rows = []
    for state in states:
        row = NodeRow(state=state)
        candidates = by_model[None] + (by_model[state.model] if state.model else [])
        for spec, demand in candidates:
            if fit_count(demand, state):
                row.fitting.append(spec)
                if spec.pk in chosen_ids:
                    row.status = IDLE
        rows.append(row)
    rows.sort(key=lambda row: (row.status != IDLE, row.state.name))
    return rows


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
