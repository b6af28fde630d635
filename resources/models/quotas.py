"""Quotas (SPEC G1): how many boards of one accelerator model a project or a department is
guaranteed, and the most it may hold, and who changed them."""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

BOARDS = {"max_digits": 7, "decimal_places": 3}


class Quota(models.Model):
    """Boards of ``accelerator_model`` for one holder: a project or a department, never both.

    ``pool`` narrows it to one dedicated pool; empty, it counts the model's boards on every
    node. ``maximum`` empty: no cap beyond the department's (or the cluster's) own.
    """

    project = models.ForeignKey(
        "console.Project", verbose_name=_("project"), null=True, blank=True,
        on_delete=models.CASCADE, related_name="quotas",
    )  # fmt: skip
    department = models.ForeignKey(
        "console.Department", verbose_name=_("department"), null=True, blank=True,
        on_delete=models.CASCADE, related_name="quotas",
    )  # fmt: skip
    accelerator_model = models.ForeignKey(
        "resources.AcceleratorModel", verbose_name=_("accelerator model"),
        on_delete=models.PROTECT, related_name="quotas",
    )  # fmt: skip
    pool = models.ForeignKey(
        "resources.ResourcePool", verbose_name=_("pool"), null=True, blank=True,
        on_delete=models.PROTECT, related_name="quotas",
        help_text=_("Empty: the model's boards on every node, shared or in a pool."),
    )  # fmt: skip
    guaranteed = models.DecimalField(
        _("guaranteed boards"), default=0, **BOARDS,
        help_text=_("The boards it is promised. Beyond them, up to its maximum, its jobs run "
                    "on boards others leave idle: borrowed."),
    )  # fmt: skip
    maximum = models.DecimalField(
        _("maximum boards"), null=True, blank=True, **BOARDS,
        help_text=_("The most it holds at once, borrowing included. Empty: no maximum."),
    )  # fmt: skip
    weight = models.PositiveSmallIntegerField(
        _("fair-share weight"), default=1,
        validators=[MinValueValidator(1), MaxValueValidator(1000)],
        help_text=_(
            "Its share of the cluster against other teams' when the queue is ordered by "
            "fair share: a team of weight 2 is owed twice the board use of a team of weight 1."
        ),
    )  # fmt: skip

    class Meta:
        ordering = ["department__name", "project__name", "accelerator_model__name", "pool__name"]
        verbose_name = _("quota")
        verbose_name_plural = _("quotas")
        constraints = [
            models.CheckConstraint(
                condition=Q(project__isnull=True, department__isnull=False)
                | Q(project__isnull=False, department__isnull=True),
                name="quota_one_holder",
            ),
            models.CheckConstraint(condition=Q(guaranteed__gte=0), name="quota_guaranteed_gte_0"),
            models.CheckConstraint(
                condition=Q(maximum__isnull=True) | Q(maximum__gte=models.F("guaranteed")),
                name="quota_maximum_gte_guaranteed",
            ),
            # One quota per holder and scope; an empty pool is a scope of its own.
            *(
                models.UniqueConstraint(
                    fields=[holder, "accelerator_model", *(["pool"] if pooled else [])],
                    condition=Q(pool__isnull=not pooled),
                    name=f"one_quota_per_{holder}_{'pool' if pooled else 'model'}",
                )
                for holder in ("project", "department")
                for pooled in (True, False)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.holder}: {self.scope}"

    @property
    def holder(self):
        return self.project if self.project_id else self.department

    @property
    def scope(self) -> str:
        where = self.pool.name if self.pool_id else _("all nodes")
        return f"{self.accelerator_model.name} · {where}"


class QuotaChange(models.Model):
    """Who set which quota, when, from what to what (empty: none before, or deleted)."""

    holder = models.CharField(_("holder"), max_length=120)
    scope = models.CharField(_("scope"), max_length=140)
    old_value = models.JSONField(_("old value"), null=True)
    new_value = models.JSONField(_("new value"), null=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_at = models.DateTimeField(_("changed"), auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-changed_at", "-id"]
        verbose_name = _("quota change")
        verbose_name_plural = _("quota changes")

    def __str__(self) -> str:
        return f"{self.holder} {self.scope}: {self.old_value!r} -> {self.new_value!r}"
