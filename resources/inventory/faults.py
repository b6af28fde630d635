"""Faults on nodes: injecting them (tests, demos, drills), isolating a faulty node and
returning it to service (SPEC F3). The jobs side decides what a fault means for a job.
"""

from __future__ import annotations

import re
import signal

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from console.words import wording
from resources.models import FaultKind, Node, NodeFault
from resources.models.faults import DEFAULT_CONDITION, DEFAULT_XID, DISKS, STATE_KINDS

SIGNALS = {FaultKind.KILL: signal.SIGKILL, FaultKind.FREEZE: signal.SIGSTOP}
CONDITION_TYPE = re.compile(r"[A-Z][A-Za-z0-9]{1,19}")


class FaultError(ValueError):
    """An injection that cannot be done, in words for the person who asked."""


def check_detail(kind: str, detail: str, node: Node) -> str:
    """The ``detail`` of an injection, checked: a disk name for a full disk, a board index
    for a failed board, a condition's type, an XID as "board:code"; nothing else."""
    detail = (detail or "").strip()
    if kind == FaultKind.DISK:
        if detail and detail not in DISKS:
            raise FaultError(_("Pick the disk: root, shm or cache (empty: all three)."))
    elif kind == FaultKind.BOARD:
        if not node.board_count:
            raise FaultError(_("This node has no boards."))
        if detail and (not detail.isdigit() or int(detail) >= node.board_count):
            raise FaultError(
                _("Give a board index from 0 to %(last)s, or leave it empty for all boards.")
                % {"last": node.board_count - 1}
            )
    elif kind == FaultKind.CONDITION:
        detail = detail or DEFAULT_CONDITION
        if not CONDITION_TYPE.fullmatch(detail) or detail == "Ready":
            raise FaultError(
                _("Give the condition's type as a cluster names it, e.g. KernelDeadlock or "
                  "ReadonlyFilesystem (empty: KernelDeadlock).")
            )  # fmt: skip
    elif kind == FaultKind.XID:
        detail = _xid(detail or DEFAULT_XID, node)
    elif detail:
        raise FaultError(_("This fault takes no detail."))
    return detail


def _xid(detail: str, node: Node) -> str:
    """ "board:code" (or "code": board 0), a hardware XID on a board of the node."""
    from resources.backends.kubernetes.prometheus import HARDWARE_XIDS

    if not node.board_count:
        raise FaultError(_("This node has no boards."))
    board, _sep, code = detail.rpartition(":")
    board = board or "0"
    if not (board.isdigit() and int(board) < node.board_count and code.isdigit()
            and int(code) in HARDWARE_XIDS):  # fmt: skip
        raise FaultError(
            _("Give board:XID, e.g. 0:79, with a board from 0 to %(last)s and a hardware XID "
              "(%(codes)s).")
            % {"last": node.board_count - 1, "codes": ", ".join(map(str, sorted(HARDWARE_XIDS)))}
        )  # fmt: skip
    return f"{int(board)}:{int(code)}"


def inject(node: Node, kind: str, detail: str = "", user=None) -> NodeFault:
    """Inject a fault on ``node``. A state (heartbeat, NIC, board, disk, DNS, condition,
    XID) lasts until cleared; a killed or frozen process is done now, to every job process
    on the node."""
    from resources.backends import local_backend

    detail = check_detail(kind, detail, node)
    effect = ""
    if kind in SIGNALS:
        if node.cluster_id is not None:
            raise FaultError(_("Processes can only be killed or frozen on local nodes."))
        hit = local_backend().signal_node(node.name, SIGNALS[kind])
        effect = f"sent to {', '.join(hit)}" if hit else "no job process runs there"
    fault = NodeFault.objects.create(
        node=node, kind=kind, detail=detail, created_by=user, effect=effect,
        cleared_at=None if kind in STATE_KINDS else timezone.now(),
    )  # fmt: skip
    return fault


def clear(fault: NodeFault) -> bool:
    return bool(
        NodeFault.objects.filter(pk=fault.pk, cleared_at__isnull=True).update(
            cleared_at=timezone.now()
        )
    )


def isolate(names: list[str], reason) -> list[str]:
    """Cordon the named nodes for a fault (no new job starts there until an admin returns
    them); returns those newly isolated. ``reason`` may be a console.words Said (worded per
    reader); it is kept in English too."""
    said = reason.as_json() if hasattr(reason, "as_json") else None
    newly = []
    with transaction.atomic():
        for node in Node.objects.select_for_update().filter(name__in=names, isolated_at=None):
            node.cordoned = True
            node.isolated_at = timezone.now()
            node.isolated_reason = str(reason)[:500]
            node.isolated_said = said
            node.save(update_fields=["cordoned", "isolated_at", "isolated_reason", "isolated_said"])
            newly.append(node.name)
            _cordon_follows(node)
    return newly


def _cordon_follows(node: Node) -> None:
    """A cluster's node: its cordon there follows the isolation at once (SPEC F3)."""
    if node.cluster_id is not None:
        from console.celery import send

        cluster_id = node.cluster_id
        transaction.on_commit(lambda: send("resources.tasks.sync_cluster_now", cluster_id))


def return_to_service(node: Node) -> int:
    """Undo an isolation (an admin checked the node): it takes jobs again, and the faults
    still injected on it are cleared. Returns how many faults were cleared."""
    with transaction.atomic():
        Node.objects.filter(pk=node.pk).update(
            cordoned=False, isolated_at=None, isolated_reason="", isolated_said=None
        )
        _cordon_follows(node)
        return NodeFault.objects.active().filter(node=node).update(cleared_at=timezone.now())


def isolation_text(node: Node) -> str:
    """Why a node is isolated, in the reader's language."""
    return wording(node.isolated_reason, node.isolated_said)
