"""Why an attempt failed (SPEC F3, seed 003): the telling exit code of its replicas, and
the cause found on its nodes, in words. jobs.faults.recovery acts on the answer."""

from __future__ import annotations

from django.utils.translation import gettext_lazy, gettext_noop

from console import limits
from console.words import said
from jobs.faults.policy import Cause, classify
from jobs.models import Attempt
from resources.backends.base import ReplicaState, WorkloadStatus
from resources.inventory import probes
from resources.models import FaultKind, Node, NodeFault

CHECK_WORDS = {
    "heartbeat": gettext_noop("heartbeat lost"),
    "nic": gettext_noop("network interface down"),
    "gpu-check": gettext_noop("boards not visible"),
    "xid": gettext_noop("a board's hardware error (XID)"),
    "process": gettext_noop("a process was killed or frozen"),
    "exit-code": gettext_noop("a fault exit code"),
    "node-lost": gettext_noop("the node or pod was lost"),
    "performance": gettext_noop("performance below its threshold"),
    "hang": gettext_noop("no progress"),
}


def check_words(check: str):
    """The words of a check, kept in English and translated where a reader sees them (a
    lazy parameter of said()): "heartbeat lost" inside a Chinese sentence is worded too."""
    if check.startswith(probes.CONDITION):
        kind = check.removeprefix(probes.CONDITION)
        return said(gettext_noop("the node condition %(condition)s"), condition=kind)
    return gettext_lazy(CHECK_WORDS[check]) if check in CHECK_WORDS else check


def telling_exit_code(replicas, fault_codes: set[int] | None = None) -> int | None:
    """The exit code that says why a workload failed: a fault exit code of any replica
    that failed, else the first failed replica's; None when none failed with a code.

    Only the replicas that failed count: the others were stopped because one failed and
    end with 143 (SIGTERM). And a fault code wins over the replicas' order (by name): when
    "worker 1" exits with 101, "worker 0" stopped for it must not make the fault a plain
    failure that nobody recovers or explains (SPEC F3)."""
    if fault_codes is None:
        fault_codes = set(limits.current().fault_exit_codes)
    codes = [
        r.exit_code
        for r in replicas
        if r.state == ReplicaState.FAILED and r.exit_code not in (None, 0)
    ]
    return next((code for code in codes if code in fault_codes), codes[0] if codes else None)


def precheck_found(failures) -> tuple[list[str], str, object]:
    """(nodes, first item, words) of failed prechecks (SPEC F1): where, and what."""
    nodes = sorted({f.node for f in failures})
    items = ", ".join(dict.fromkeys(f.item for f in failures))
    found = said(
        gettext_noop("Precheck failed on %(nodes)s (%(items)s): its code was not started."),
        nodes=", ".join(nodes),
        items=items,
    )
    return nodes, failures[0].item, found


def diagnose(attempt: Attempt, status: WorkloadStatus):
    """Why a failed attempt failed: a precheck its pods ran (on a cluster), else its nodes'
    state now, the process faults injected there while it ran, its exit code and what the
    backend says (SPEC F3, seed 003)."""
    failures = [c for c in status.prechecks if c.ok is False]
    if failures:
        nodes, check, found = precheck_found(failures)
        return Cause.PRECHECK, check, nodes, found
    names = nodes_of(attempt)
    faulty = _faulty(names)
    process = list(
        NodeFault.objects.filter(
            node__name__in=names,
            kind__in=[FaultKind.KILL, FaultKind.FREEZE],
            created_at__gte=attempt.created_at,
        ).values_list("node__name", flat=True)
    )
    fault_codes = set(limits.current().fault_exit_codes)
    exit_code = telling_exit_code(status.replicas, fault_codes)
    if exit_code is None:  # settled from the row alone (jobs.execution.settle.settle_left)
        exit_code = attempt.exit_code
    cause = classify(
        exit_code=exit_code,
        fault_codes=fault_codes,
        node_lost=status.node_lost,
        hardware=bool(faulty),
        process=bool(process),
    )
    reason = status.reason or "it failed"
    if cause == Cause.HARDWARE:
        where = sorted(faulty)
        check = faulty[where[0]]
        found = said(
            gettext_noop("It failed (%(reason)s) with %(what)s on %(nodes)s."),
            reason=reason,
            what=check_words(check),
            nodes=", ".join(where),
        )
        return cause, check, where, found
    if cause == Cause.PROCESS:
        where = sorted(set(process))
        found = said(
            gettext_noop("It failed (%(reason)s): a process on %(nodes)s was killed or frozen."),
            reason=reason,
            nodes=", ".join(where),
        )
        return cause, "process", where, found
    if cause == Cause.NODE_LOST:
        found = said(gettext_noop("It failed: %(reason)s."), reason=reason)
        return cause, "node-lost", names, found
    if cause == Cause.EXIT_CODE:
        found = said(
            gettext_noop("It exited with %(code)s, a fault exit code (%(reason)s)."),
            code=exit_code,
            reason=reason,
        )
        return cause, "exit-code", names, found
    found = said(gettext_noop("Failed: %(reason)s."), reason=reason)
    return cause, "exit-code", names, found


def _faulty(names: list[str]) -> dict[str, str]:
    """Node -> the first of its checks that fails now, for the nodes ``names`` that have one."""
    nodes = list(Node.objects.filter(name__in=names).select_related("pool"))
    facts = probes.facts(nodes)
    faulty: dict[str, str] = {}
    for node in nodes:
        for result in probes.inspect(node, facts[node.name], boards=node.board_count > 0):
            if result.ok is False:
                faulty.setdefault(node.name, result.item)
    return faulty


def nodes_of(attempt: Attempt) -> list[str]:
    return list(dict.fromkeys(r["node"] for r in attempt.replicas if r.get("node")))
