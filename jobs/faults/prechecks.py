"""Environment prechecks before every start and restart (SPEC F1, seed 004).

Each check runs on every node of the job and becomes one event, with seed 004's keyword as
its ``item`` (``dns``, ``disk-size root``, ``disk-size shm``, ``disk-size cache``,
``ulimit`` when on InfiniBand, ``gpu-check`` when the job holds boards; on a cluster, each
problem condition it reports of a node, ``condition KernelDeadlock``), naming the nodes
that failed. A failed check starts nothing of the job's code: the nodes are isolated and the
job goes back to the queue's head, or ends as error when it has no recovery left.
"""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext_noop

from console import limits
from console.words import counted, said
from jobs import lifecycle
from jobs.faults import recovery
from jobs.models import Attempt, Job, JobEvent
from resources.backends.base import NodeChecks, Workload, WorkloadStatus
from resources.inventory import probes
from resources.models import Node

PASSED = {
    "dns": gettext_noop("Precheck dns passed: the peers' names resolve on %(nodes)s."),
    "disk": gettext_noop(
        "Precheck %(item)s passed: at least %(free)s free on %(nodes)s (needs more than "
        "%(needed)s)."
    ),
    "ulimit": gettext_noop("Precheck ulimit passed: the InfiniBand limits hold on %(nodes)s."),
    "gpu-check": gettext_noop("Precheck gpu-check passed: every board is visible on %(nodes)s."),
}
FAILED = {
    "dns": gettext_noop("Precheck dns failed on %(nodes)s: the peers' names do not resolve."),
    "disk": gettext_noop(
        "Precheck %(item)s failed on %(nodes)s: %(free)s free, needs more than %(needed)s."
    ),
    "ulimit": gettext_noop("Precheck ulimit failed on %(nodes)s: too low: %(value)s."),
    "gpu-check": counted(
        "Precheck gpu-check failed on %(nodes)s: %(value)s of %(needed)s board visible.",
        "Precheck gpu-check failed on %(nodes)s: %(value)s of %(needed)s boards visible.",
        "needed",
    ),
    # What a cluster reports of the node (resources.inventory.probes.CONDITION).
    "condition": gettext_noop(
        "Precheck %(item)s failed on %(nodes)s: the cluster reports %(value)s."
    ),
}
# Items worded by one message each: the three disks, a cluster's conditions.
KEYS = (("disk", "disk-size"), ("condition", probes.CONDITION))
UNMEASURED = gettext_noop(
    "Precheck %(item)s not measured on %(nodes)s: this cluster does not report it."
)


# The items a cluster's pods measure themselves (resources' k8s precheck container).
IN_WORKLOAD = ("dns", "disk-size ", "ulimit", "gpu-check")
# Every in-workload precheck reports these (an item it could not measure says so).
WORKLOAD_ITEMS = ("dns", "disk-size root")


def results(job: Job, workload: Workload, *, in_workload: bool = False) -> list[probes.Result]:
    """Every check of every node the workload runs on. ``in_workload``: the backend measures
    seed 004's items in the workload itself (Workload.prechecks), so only what it reports of
    its nodes (their conditions) and the faults injected there are checked here."""
    with_boards = {r.node for r in workload.replicas if r.slots}
    nodes = _nodes(workload)
    facts = probes.facts(nodes)
    caps = limits.current()
    found = []
    for node in nodes:
        needed = probes.thresholds(node, caps)
        found += probes.precheck(node, facts[node.name], needed, boards=node.name in with_boards)
    if in_workload:
        found = [
            r for r in found if (r.injected and r.ok is False) or not r.item.startswith(IN_WORKLOAD)
        ]
    return found


def asked(workload: Workload) -> tuple[NodeChecks, ...]:
    """What the checks in the workload ask of each of its nodes (the pool's thresholds,
    else the site's; the limits on InfiniBand nodes)."""
    caps = limits.current()
    found = []
    for node in _nodes(workload):
        needed = probes.thresholds(node, caps)
        found.append(
            NodeChecks(
                node=node.name,
                root_gb=needed["root"],
                shm_gb=needed["shm"],
                cache_gb=needed["cache"],
                infiniband=probes.on_infiniband(node),
            )
        )
    return tuple(found)


def _nodes(workload: Workload) -> list[Node]:
    """The workload's nodes, in the order its replicas name them."""
    names = list(dict.fromkeys(r.node for r in workload.replicas))
    nodes = Node.objects.filter(name__in=names).select_related("pool")
    return sorted(nodes, key=lambda n: names.index(n.name))


def passed(job: Job, workload: Workload, *, in_workload: bool = False) -> bool:
    """Run the prechecks, record each as an event; False when one failed (the job was then
    requeued or ended by recovery)."""
    found = results(job, workload, in_workload=in_workload)
    _record_all(job, found)
    failures = [r for r in found if r.ok is False]
    if not failures:
        return True
    recovery.precheck_failed(job, failures)
    return False


def _record_all(job: Job, found: list) -> None:
    by_item: dict[str, list] = {}
    for result in found:
        by_item.setdefault(result.item, []).append(result)
    for item, group in by_item.items():
        _record(job, item, group)


# Attempts whose in-workload prechecks were told, in this process (a sync pass must not cost
# a query per running attempt for nothing new).
_told: set[tuple] = set()


def tell(attempt: Attempt, status: WorkloadStatus) -> None:
    """The prechecks the backend ran in the attempt's workload, as the same per-item events
    the console's own write: once, when every replica has reported (or the workload ended,
    with what came back: a failed item ends it before the others report)."""
    key = (attempt.pk, attempt.created_at)
    if key in _told or not status.prechecks:
        return
    reported = {c.replica for c in status.prechecks}
    wanted = {r["name"] for r in attempt.replicas}
    if not (reported >= wanted or status.state.finished):
        return
    with transaction.atomic():
        Attempt.objects.select_for_update().filter(pk=attempt.pk).first()
        told = JobEvent.objects.filter(
            job_id=attempt.job_id, item__in=WORKLOAD_ITEMS, at__gte=attempt.created_at
        ).exists()
        if not told:
            _record_all(attempt.job, _by_node(status.prechecks))
    if len(_told) > 10_000:  # ended attempts are never asked about again
        _told.clear()
    _told.add(key)


def _by_node(checked) -> list[probes.Result]:
    """One result per item and node (replicas sharing a node, such as a parameter server
    beside its worker, each checked it): the worst of them."""
    rank = {False: 0, None: 1, True: 2}
    found: dict[tuple[str, str], probes.Result] = {}
    for c in checked:
        result = probes.Result(c.item, c.node, c.ok, value=c.value, needed=c.needed)
        known = found.get((c.item, c.node))
        if known is None or rank[result.ok] < rank[known.ok]:
            found[(c.item, c.node)] = result
    return list(found.values())


def _record(job: Job, item: str, group: list[probes.Result]) -> None:
    key = next((k for k, start in KEYS if item.startswith(start)), item)
    bad = [r for r in group if r.ok is False]
    unknown = [r for r in group if r.ok is None]
    if bad:
        shown = bad
        text, kind = FAILED[key], JobEvent.Kind.ERROR
    elif len(unknown) == len(group):
        shown, text, kind = group, UNMEASURED, JobEvent.Kind.INFO
    else:
        shown = [r for r in group if r.ok]
        text, kind = PASSED[key], JobEvent.Kind.INFO
    # Disks: the least free among the nodes named (the one closest to failing).
    lowest = (
        min(shown, key=lambda r: float(r.value.split()[0]) if r.value else 0.0)
        if key == "disk"
        else shown[0]
    )
    message = said(
        text,
        item=item,
        nodes=", ".join(r.node for r in shown),
        free=lowest.value,
        needed=lowest.needed,
        value=lowest.value,
    )
    lifecycle.record(job, message, kind=kind, item=item)
