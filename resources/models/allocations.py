"""Who holds which part of which node: the one record availability and scheduling read."""

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class AllocationQuerySet(models.QuerySet):
    def live(self):
        return self.filter(released_at__isnull=True)


class Allocation(models.Model):
    """One replica of a workload on one node.

    ``slots`` are the virtual boards held, numbered ``physical * slices_per_board + virtual``
    so that a whole board on an unsliced node is just its physical index.
    """

    class Holder(models.TextChoices):
        JOB = "job", _("training job")
        DEVENV = "devenv", _("development environment")
        TENSORBOARD = "tensorboard", _("TensorBoard")

    node = models.ForeignKey("resources.Node", on_delete=models.PROTECT, related_name="allocations")
    holder_kind = models.CharField(max_length=12, choices=Holder, default=Holder.JOB)
    holder_id = models.BigIntegerField()
    label = models.CharField(_("application"), max_length=253)
    replica = models.CharField(_("replica"), max_length=64, blank=True)
    cpu_millicores = models.PositiveIntegerField()
    memory_mib = models.PositiveIntegerField()
    slots = ArrayField(models.PositiveSmallIntegerField(), default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    released_at = models.DateTimeField(null=True, blank=True)

    objects = AllocationQuerySet.as_manager()

    class Meta:
        verbose_name = _("allocation")
        verbose_name_plural = _("allocations")
        indexes = [
            models.Index(
                fields=["node"], condition=Q(released_at__isnull=True), name="live_alloc_node"
            ),
            models.Index(fields=["holder_kind", "holder_id"], name="alloc_holder"),
        ]

    def __str__(self) -> str:
        return f"{self.label} on {self.node_id}"
