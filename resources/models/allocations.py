"""Who holds which part of which node: the one record availability and scheduling read."""

from django.conf import settings
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
    # The ledger (SPEC G4): who held it and where, as they were when it was allocated, so that
    # usage stays with them whatever changes later (a node moved to another pool, a job
    # deleted). Empty on rows older than the ledger that no holder could be found for.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("owner"), on_delete=models.PROTECT,
        null=True, blank=True, related_name="+",
    )  # fmt: skip
    project = models.ForeignKey(
        "console.Project", verbose_name=_("project"), on_delete=models.PROTECT,
        null=True, blank=True, related_name="+",
    )  # fmt: skip
    pool = models.ForeignKey(
        "resources.ResourcePool", verbose_name=_("pool"), on_delete=models.SET_NULL,
        null=True, blank=True, related_name="+",
        help_text=_("The node's dedicated pool when it was allocated; empty: a shared node."),
    )  # fmt: skip
    boards = models.DecimalField(
        _("boards"), max_digits=7, decimal_places=3, default=0,
        help_text=_("Whole boards held: virtual slices count as their share of a board."),
    )  # fmt: skip

    objects = AllocationQuerySet.as_manager()

    class Meta:
        verbose_name = _("allocation")
        verbose_name_plural = _("allocations")
        indexes = [
            models.Index(
                fields=["node"], condition=Q(released_at__isnull=True), name="live_alloc_node"
            ),
            models.Index(fields=["holder_kind", "holder_id"], name="alloc_holder"),
            # Usage over a period reads the intervals that began before its end.
            models.Index(fields=["created_at"], name="alloc_created"),
        ]

    def __str__(self) -> str:
        return f"{self.label} on {self.node_id}"


class UsageDigest(models.Model):
    """A lead's weekly usage mail (SPEC G4), one row per lead and week: the mail goes out only
    for the one that inserts the row, however often the task runs."""

    lead = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    week = models.DateField(_("week starting"))
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["lead", "week"], name="one_usage_digest_a_week")
        ]
        verbose_name = _("usage digest")
        verbose_name_plural = _("usage digests")

    def __str__(self) -> str:
        return f"{self.lead} for the week of {self.week}"
