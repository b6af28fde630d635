"""Inventory sync: make the Node rows say what the backend reports.

Idempotent. Sync owns a node's hardware facts; the console owns its pool, cordon and
retirement. A node the backend no longer reports is forgotten, unless allocations (live or
past) point at it: then it stays, marked not ready.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from resources.backends.base import NodeInfo
from resources.models import AcceleratorModel, DriverVersion, Node, ResourcePool, VendorKind


@dataclass
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    marked_not_ready: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.marked_not_ready or self.removed)

    def __str__(self) -> str:
        return (
            f"{len(self.created)} created, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.marked_not_ready)} marked not ready, "
            f"{len(self.removed)} removed"
        )


HARDWARE_FIELDS = (
    "status",
    "conditions",
    "os_image",
    "kernel",
    "cpu_millicores",
    "memory_mib",
    "accelerator_model_id",
    "board_count",
    "slices_per_board",
    "driver_version_id",
    "labels",
)


def _accelerator(info: NodeInfo, cache: dict) -> AcceleratorModel | None:
    if not info.board_count or not info.accelerator_model:
        return None
    key = info.accelerator_model
    if key not in cache:
        cache[key], _ = AcceleratorModel.objects.get_or_create(
            name=key,
            defaults={"kind": info.accelerator_kind, "memory_gib": info.accelerator_memory_gib},
        )
    return cache[key]


def _driver(info: NodeInfo, kind: str, cache: dict) -> DriverVersion | None:
    if not info.driver_version or kind == VendorKind.CPU:
        return None
    key = (kind, info.driver_version)
    if key not in cache:
        cache[key], _ = DriverVersion.objects.get_or_create(kind=kind, version=info.driver_version)
    return cache[key]


@transaction.atomic
def sync(
    source: str,
    infos: list[NodeInfo],
    pool_label: str = "",
    cluster=None,
    default_pool: ResourcePool | None = None,
) -> SyncReport:
    """Apply one backend's report. ``source`` names the backend and ``cluster`` (None: the
    local backend) which of its clusters (nodes of others and manual ones are left alone).
    A new node goes into the pool its ``pool_label`` names, else into ``default_pool``."""
    report = SyncReport()
    now = timezone.now()
    models: dict = {}
    drivers: dict = {}
    pools = {pool.name: pool for pool in ResourcePool.objects.all()}
    existing = {
        node.name: node
        for node in Node.objects.select_for_update().filter(source=source, cluster=cluster)
    }
    for info in infos:
        wanted = _wanted(info, models, drivers)
        node = existing.pop(info.name, None)
        if node is None:
            if Node.objects.filter(name=info.name).exists():
                continue  # a manual node or another backend's: not ours to change
            pool = pools.get(info.labels.get(pool_label, "")) if pool_label else None
            Node.objects.create(
                name=info.name,
                source=source,
                cluster=cluster,
                last_heartbeat=now,
                pool=pool or default_pool,
                **wanted,
            )
            report.created.append(info.name)
            continue
        changed = [name for name in HARDWARE_FIELDS if getattr(node, name) != wanted[name]]
        for name in changed:
            setattr(node, name, wanted[name])
        node.last_heartbeat = now
        node.save(update_fields=[*changed, "last_heartbeat"])
        (report.updated if changed else report.unchanged).append(info.name)
    _forget_unreported(existing.values(), report)
    return report


def _wanted(info: NodeInfo, models: dict, drivers: dict) -> dict:
    """The hardware facts of a node as the backend reports them (HARDWARE_FIELDS)."""
    model = _accelerator(info, models)
    return {
        "status": Node.Status.READY if info.ready else Node.Status.NOT_READY,
        "conditions": [list(condition) for condition in info.conditions],
        "os_image": info.os_image,
        "kernel": info.kernel,
        "cpu_millicores": info.cpu_millicores,
        "memory_mib": info.memory_mib,
        "accelerator_model_id": model.pk if model else None,
        "board_count": info.board_count if model else 0,
        "slices_per_board": info.slices_per_board if model else 1,
        "driver_version_id": getattr(
            _driver(info, model.kind if model else VendorKind.CPU, drivers), "pk", None
        ),
        "labels": dict(info.labels),
    }


def _forget_unreported(nodes, report: SyncReport) -> None:
    """Nodes the backend no longer reports: kept as not ready while allocations point at
    them, else removed."""
    for node in nodes:
        if node.allocations.exists():
            if node.status != Node.Status.NOT_READY:
                node.status = Node.Status.NOT_READY
                node.save(update_fields=["status"])
                report.marked_not_ready.append(node.name)
        else:
            node.delete()
            report.removed.append(node.name)
