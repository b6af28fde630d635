"""Periodic hardware inspection of the nodes that run jobs (SPEC F2, seed 000 "故障巡检").

Every ``inspection_seconds`` (an admin's limit) the heartbeat, network interface and boards
of each node holding a running attempt are checked; a fault becomes an event naming the node
and the check, and the attempts there are interrupted (jobs.faults.recovery): a job with
checkpoint resume saves and resumes elsewhere, one with fault restart restarts elsewhere,
any other ends as error. Nodes at fault are isolated either way.
"""

from __future__ import annotations

from django.core.cache import cache
from django.utils.translation import gettext_noop

from console import limits
from console.words import said
from jobs.faults import diagnosis, recovery
from jobs.faults.policy import Cause
from jobs.models import Attempt
from resources.inventory import probes
from resources.models import Node

DUE_KEY = "fault-inspection-due"
BOARDS = ("gpu-check", "xid")  # checks of the boards: they matter to jobs holding boards


def due() -> bool:
    """True once per inspection period across all workers (the first to ask wins)."""
    return cache.add(DUE_KEY, 1, timeout=limits.current().inspection_seconds)


def inspect() -> list[int]:
    """One inspection; returns the ids of the attempts interrupted."""
    attempts = list(
        Attempt.objects.filter(
            ended_at__isnull=True, stop_cause="", submitted_at__isnull=False
        ).select_related("job")
    )
    names = {r["node"] for a in attempts for r in a.replicas if r.get("node")}
    if not names:
        return []
    nodes = list(Node.objects.filter(name__in=names).select_related("pool"))
    facts = probes.facts(nodes)
    faulty: dict[str, list[probes.Result]] = {}
    for node in nodes:
        bad = [
            r
            for r in probes.inspect(node, facts[node.name], boards=node.board_count > 0)
            if r.ok is False
        ]
        if bad:
            faulty[node.name] = bad
    interrupted = []
    for attempt in attempts:
        hit = [name for name in diagnosis.nodes_of(attempt) if name in faulty]
        if not hit:
            continue
        # A failed board matters to the jobs that hold boards there.
        uses_boards = attempt.job.spec_id is None or _holds_boards(attempt)
        found = [r for name in hit for r in faulty[name] if r.item not in BOARDS or uses_boards]
        if not found:
            continue
        where = sorted({r.node for r in found})
        check = found[0].item
        # What the cluster said, where it says it in words (not a count of boards).
        told = check in ("xid", "nic") or check.startswith(probes.CONDITION)
        value = found[0].value.rstrip(". ") if told else ""
        message = said(
            gettext_noop("Inspection found %(what)s on %(nodes)s (%(check)s: %(value)s).")
            if value
            else gettext_noop("Inspection found %(what)s on %(nodes)s (%(check)s)."),
            what=diagnosis.check_words(check),
            nodes=", ".join(where),
            check=check,
            value=value,
        )
        if recovery.interrupt(attempt, Cause.HARDWARE, check, where, message):
            interrupted.append(attempt.pk)
    return interrupted


def _holds_boards(attempt: Attempt) -> bool:
    spec = attempt.job.spec
    return bool(spec and spec.boards)
