"""Faults injected on a node (SPEC F, issue "fault injection"): tests, demos and drills.

An injected fault is a state the node's probes read next to the real ones (a heartbeat
lost, a NIC down, a board failed, a disk full, a name unresolvable, a condition a cluster
reports of the node, a board's hardware XID error) until an admin clears it.
A killed or frozen process is an act, done at once to the job's real processes; its record
stays so that the job's end can be explained as a fault, not as a bug in the job.
"""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class FaultKind(models.TextChoices):
    HEARTBEAT = "heartbeat", _("Heartbeat lost")
    NIC = "nic", _("Network interface down")
    BOARD = "board", _("Board failed")
    DISK = "disk", _("Disk full")
    DNS = "dns", _("Names do not resolve")
    CONDITION = "condition", _("Node condition")
    XID = "xid", _("Board XID error")
    KILL = "kill", _("Process killed (SIGKILL)")
    FREEZE = "freeze", _("Process frozen (SIGSTOP)")


# States the probes read until cleared; the others act once on the running processes.
STATE_KINDS = frozenset({FaultKind.HEARTBEAT, FaultKind.NIC, FaultKind.BOARD, FaultKind.DISK,
                         FaultKind.DNS, FaultKind.CONDITION, FaultKind.XID})  # fmt: skip
DISKS = ("root", "shm", "cache")
# What a condition or an XID injected without a detail is: a kernel that hangs (what a
# node-problem-detector reports), a board fallen off the bus (board 0).
DEFAULT_CONDITION = "KernelDeadlock"
DEFAULT_XID = "0:79"


class NodeFaultQuerySet(models.QuerySet):
    def active(self):
        return self.filter(cleared_at__isnull=True)


class NodeFault(models.Model):
    node = models.ForeignKey("resources.Node", on_delete=models.CASCADE, related_name="faults")
    kind = models.CharField(_("fault"), max_length=10, choices=FaultKind)
    # Which disk ("root", "shm", "cache") or board index (empty: all of them); a condition's
    # type; an XID as "board:code".
    detail = models.CharField(_("which"), max_length=20, blank=True)
    created_at = models.DateTimeField(_("injected at"), auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )  # fmt: skip
    cleared_at = models.DateTimeField(_("cleared at"), null=True, blank=True)
    # What the injection did at once (processes killed or frozen), in English.
    effect = models.CharField(max_length=300, blank=True)

    objects = NodeFaultQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("injected fault")
        verbose_name_plural = _("injected faults")
        indexes = [
            models.Index(fields=["node"], condition=models.Q(cleared_at__isnull=True),
                         name="nodefault_active"),
        ]  # fmt: skip

    def __str__(self) -> str:
        detail = f" ({self.detail})" if self.detail else ""
        return f"{self.node_id}: {self.kind}{detail}"
