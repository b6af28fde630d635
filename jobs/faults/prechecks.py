"""Environment prechecks before every start and restart (SPEC F1, seed 004).

Each check runs on every node of the job and becomes one event, with seed 004's keyword as
its ``item`` (``dns``, ``disk-size root``, ``disk-size shm``, ``disk-size cache``,
``ulimit`` when on InfiniBand, ``gpu-check`` when the job holds boards; on a cluster, each
problem condition it reports of a node, ``condition KernelDeadlock``), naming the nodes
that failed. A failed check starts nothing of the job's code: the nodes are isolated and the
job goes back to the queue's head, or ends as error when it has no recovery left.
"""

from __future__ import annotations

from django.utils.translation import gettext_noop

from console import limits
from console.words import counted, said
from jobs import lifecycle
from jobs.faults import recovery
from jobs.models import Job, JobEvent
from resources.backends.base import Workload
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


def results(job: Job, workload: Workload) -> list[probes.Result]:
    """Every check of every node the workload runs on."""
    names = list(dict.fromkeys(r.node for r in workload.replicas))
    with_boards = {r.node for r in workload.replicas if r.slots}
    nodes = list(Node.objects.filter(name__in=names).select_related("pool"))
    facts = probes.facts(nodes)
    caps = limits.current()
    found = []
    for node in sorted(nodes, key=lambda n: names.index(n.name)):
        needed = probes.thresholds(node, caps)
        found += probes.precheck(node, facts[node.name], needed, boards=node.name in with_boards)
    return found


def passed(job: Job, workload: Workload) -> bool:
    """Run the prechecks, record each as an event; False when one failed (the job was then
    requeued or ended by recovery)."""
    found = results(job, workload)
    by_item: dict[str, list[probes.Result]] = {}
    for result in found:
        by_item.setdefault(result.item, []).append(result)
    for item, group in by_item.items():
        _record(job, item, group)
    failures = [r for r in found if r.ok is False]
    if not failures:
        return True
    recovery.precheck_failed(job, failures)
    return False


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
