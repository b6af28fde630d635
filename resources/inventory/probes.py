"""What a node's checks read (SPEC F1 prechecks, F2 inspection): real facts of the node,
with any fault injected on it laid over them.

On the local backend every node is this machine, so its disks, resolver, limits and network
are measured here; on a cluster a node's heartbeat is its Ready condition as the inventory
sync last saw it, and the facts a cluster does not report are left unknown (None: the check
is skipped and says so). Results are plain data; the jobs side words them as events.
"""

from __future__ import annotations

import resource
import shutil
import socket
import time
from dataclasses import dataclass, replace
from math import inf
from pathlib import Path

from django.conf import settings

from resources.models import FaultKind, Node, NodeFault
from resources.models.faults import STATE_KINDS

GB = 1000**3
# Seed 004: on InfiniBand, each of these limits must be above the number.
ULIMITS = {
    "max locked memory": (resource.RLIMIT_MEMLOCK, 16000 * 1024),
    "open files": (resource.RLIMIT_NOFILE, 1000000),
    "stack size": (resource.RLIMIT_STACK, 8000 * 1024),
    "max user processes": (resource.RLIMIT_NPROC, 1000000),
}
INFINIBAND_LABEL = "console.io/infiniband"


@dataclass(frozen=True)
class Facts:
    """One node now. None: not known on this backend."""

    heartbeat: bool = True
    nic_up: bool | None = None
    resolves: bool | None = None
    free_gb: dict[str, float | None] | None = None  # "root", "shm", "cache" -> GB free
    ulimits: dict[str, int] | None = None  # name -> soft limit (-1: unlimited)
    boards_seen: int | None = None
    infiniband: bool = False
    injected: tuple[str, ...] = ()  # kinds of the active injected faults
    # Problems a cluster reports of the node: (condition type, "reason: message").
    conditions: tuple[tuple[str, str], ...] = ()
    # From the cluster's Prometheus: hardware XID codes lately, by board (None: no DCGM
    # exporter reports the node), and the network interfaces gone down.
    xids: dict[str, int] | None = None
    nics_down: tuple[str, ...] = ()


@dataclass(frozen=True)
class Result:
    """One check of one node: ``item`` is seed 004's keyword; ``ok`` None: not measured."""

    item: str
    node: str
    ok: bool | None
    value: str = ""  # what was found, e.g. "12.3 GB free"
    needed: str = ""  # what passes, e.g. "more than 32 GB"
    injected: bool = False  # an injected fault decided it


def _free_gb(path: Path) -> float | None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        return shutil.disk_usage(path).free / GB
    except OSError:
        return None


def _nic_up() -> bool:
    """Whether any network interface is up (the loopback counts: the local nodes' peers
    talk over it)."""
    try:
        for flags in Path("/sys/class/net").glob("*/flags"):
            if int(flags.read_text().strip(), 16) & 0x1:  # IFF_UP
                return True
    except (OSError, ValueError):
        return True  # no sysfs here: nothing says it is down
    return False


def _resolves() -> bool:
    try:
        socket.getaddrinfo("localhost", None)
        return True
    except OSError:
        return False


def _ulimits() -> dict[str, int]:
    return {name: resource.getrlimit(limit)[0] for name, (limit, _) in ULIMITS.items()}


def facts_of_this_machine() -> Facts:
    return Facts(
        heartbeat=True,
        nic_up=_nic_up(),
        resolves=_resolves(),
        free_gb={
            "root": _free_gb(settings.RUNS_DIR),
            "shm": _free_gb(Path("/dev/shm")),
            "cache": _free_gb(settings.NODE_CACHE_DIR),
        },
        ulimits=_ulimits(),
    )


def facts(nodes: list[Node]) -> dict[str, Facts]:
    """The facts of each node, injected faults laid over: one measurement of this machine
    and one query for the faults, whatever the number of nodes."""
    machine = None
    signals = _signals({node.cluster_id for node in nodes} - {None})
    faults: dict[int, list[NodeFault]] = {}
    for fault in NodeFault.objects.active().filter(node__in=nodes, kind__in=STATE_KINDS):
        faults.setdefault(fault.node_id, []).append(fault)
    found = {}
    for node in nodes:
        if node.cluster_id is None:
            machine = machine or facts_of_this_machine()
            base = replace(machine, boards_seen=node.board_count)
        else:  # what the cluster tells through the inventory sync
            base = cluster_facts(node, signals.get(node.cluster_id))
        base = replace(base, infiniband=on_infiniband(node))
        found[node.name] = _overlay(base, node, faults.get(node.pk, []))
    return found


def on_infiniband(node: Node) -> bool:
    """Whether the node is labelled as on InfiniBand (the ulimit check applies there)."""
    return str(node.labels.get(INFINIBAND_LABEL, "")) == "true"


# The condition that says the node's network is not set up: the NIC check's answer.
NETWORK_CONDITION = "NetworkUnavailable"
CONDITION = "condition "  # an inspection item: "condition KernelDeadlock"
INJECTED = "injected fault"  # the reason of a condition injected on the node


def cluster_facts(node: Node, signals: dict | None = None) -> Facts:
    """A cluster's node as its last sync saw it (heartbeat from Ready, the network from
    NetworkUnavailable, the other problem conditions as they are), and as its Prometheus
    sees it now, where one is set (``signals``: prometheus.node_signals)."""
    conditions = tuple((str(kind), str(why)) for kind, why in node.conditions or ())
    network = [c for c in conditions if c[0] == NETWORK_CONDITION]
    seen = (signals or {}).get(node.name) or {}
    down = tuple(seen.get("nic_down") or ())
    return Facts(
        heartbeat=node.status == Node.Status.READY,
        nic_up=False if network or down else None,
        conditions=tuple(c for c in conditions if c[0] != NETWORK_CONDITION),
        xids=seen.get("xid"),
        nics_down=down,
    )


# A cluster's Prometheus answer is shared by the checks of the next few seconds (an
# inspection and the prechecks of the jobs starting with it), not asked for each.
SIGNALS_SECONDS = 10.0
_signals_seen: dict[str, tuple[float, dict | None]] = {}


def _signals(cluster_ids: set[int]) -> dict[int, dict | None]:
    from resources.backends.kubernetes.prometheus import node_signals
    from resources.models import Cluster

    found = {}
    urls = Cluster.objects.filter(pk__in=cluster_ids).exclude(prometheus_url="")
    for cluster_id, url in urls.values_list("pk", "prometheus_url"):
        at, answer = _signals_seen.get(url, (-inf, None))
        if time.monotonic() - at > SIGNALS_SECONDS:
            answer = node_signals(url.rstrip("/"), timeout=5.0)
            _signals_seen[url] = (time.monotonic(), answer)
        found[cluster_id] = answer
    return found


def _overlay(base: Facts, node: Node, faults: list[NodeFault]) -> Facts:
    for fault in faults:
        if fault.kind == FaultKind.HEARTBEAT:
            base = replace(base, heartbeat=False)
        elif fault.kind == FaultKind.NIC:
            base = replace(base, nic_up=False)
        elif fault.kind == FaultKind.DNS:
            base = replace(base, resolves=False)
        elif fault.kind == FaultKind.BOARD:
            seen = node.board_count - 1 if fault.detail.isdigit() else 0
            base = replace(base, boards_seen=max(0, min(seen, base.boards_seen or 0)))
        elif fault.kind == FaultKind.DISK:
            free = dict(base.free_gb or {})
            for disk in [fault.detail] if fault.detail else ["root", "shm", "cache"]:
                free[disk] = 0.0
            base = replace(base, free_gb=free)
        elif fault.kind == FaultKind.CONDITION and fault.detail == NETWORK_CONDITION:
            base = replace(base, nic_up=False)
        elif fault.kind == FaultKind.CONDITION:
            base = replace(base, conditions=(*base.conditions, (fault.detail, INJECTED)))
        elif fault.kind == FaultKind.XID:
            board, _sep, code = fault.detail.partition(":")
            base = replace(base, xids={**(base.xids or {}), board: int(code)})
    return replace(base, injected=tuple(sorted({f.kind for f in faults})))


def thresholds(node: Node, limits) -> dict[str, int]:
    """Free GB each disk needs on ``node``: its pool's own, else the site's (SPEC F1)."""
    pool = node.pool
    own = {
        "root": pool.precheck_root_gb if pool else None,
        "shm": pool.precheck_shm_gb if pool else None,
        "cache": pool.precheck_cache_gb if pool else None,
    }
    site = {
        "root": limits.precheck_root_gb,
        "shm": limits.precheck_shm_gb,
        "cache": limits.precheck_cache_gb,
    }
    return {disk: own[disk] if own[disk] is not None else site[disk] for disk in site}


def precheck(node: Node, fact: Facts, needed: dict[str, int], *, boards: bool) -> list[Result]:
    """Seed 004's environment checks of one node, in its order; then the problems a cluster
    reports of it, which no job should start on either."""
    injected = set(fact.injected)
    results = [
        Result("dns", node.name, fact.resolves, injected=FaultKind.DNS in injected),
    ]
    for disk in ("root", "shm", "cache"):
        free = (fact.free_gb or {}).get(disk)
        results.append(
            Result(
                f"disk-size {disk}",
                node.name,
                None if free is None else free > needed[disk],
                value=f"{free:.1f} GB" if free is not None else "",
                needed=f"{needed[disk]} GB",
                injected=FaultKind.DISK in injected,
            )
        )
    if fact.infiniband:
        low = [
            name
            for name, (_limit, floor) in ULIMITS.items()
            if fact.ulimits is not None and 0 <= fact.ulimits[name] <= floor
        ]
        ok = None if fact.ulimits is None else not low
        results.append(Result("ulimit", node.name, ok, value=", ".join(low)))
    if boards:
        results.append(_boards(node, fact))
    results += _conditions(node, fact)
    return results


def _conditions(node: Node, fact: Facts) -> list[Result]:
    """The problems a cluster reports of the node (or an admin injected), one check each."""
    return [
        Result(f"{CONDITION}{kind}"[:40], node.name, False, value=why, injected=why == INJECTED)
        for kind, why in fact.conditions
    ]


def _cluster_signals(node: Node, fact: Facts) -> list[Result]:
    """What the cluster's Prometheus says of a node, where it says anything."""
    if fact.xids is None:
        return []
    xids = ", ".join(f"board {gpu}: XID {code}" for gpu, code in sorted(fact.xids.items()))
    injected = FaultKind.XID in fact.injected
    return [Result("xid", node.name, not fact.xids, value=xids, injected=injected)]


def _boards(node: Node, fact: Facts) -> Result:
    seen = fact.boards_seen
    return Result(
        "gpu-check",
        node.name,
        None if seen is None else seen >= node.board_count > 0,
        value=str(seen) if seen is not None else "",
        needed=str(node.board_count),
        injected=FaultKind.BOARD in fact.injected,
    )


def inspect(node: Node, fact: Facts, *, boards: bool) -> list[Result]:
    """The periodic checks of a node running jobs (SPEC F2): heartbeat, NIC, boards (and
    their XID errors, where the cluster's Prometheus reports them), and the problems a
    cluster reports of it (its conditions: "condition KernelDeadlock")."""
    injected = set(fact.injected)
    results = [
        Result("heartbeat", node.name, fact.heartbeat, injected=FaultKind.HEARTBEAT in injected),
        Result(
            "nic",
            node.name,
            fact.nic_up,
            value=", ".join(fact.nics_down),
            injected=FaultKind.NIC in injected,
        ),
    ]
    if boards:
        results += [_boards(node, fact), *_cluster_signals(node, fact)]
    results += _conditions(node, fact)
    return results
