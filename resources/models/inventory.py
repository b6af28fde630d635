"""The inventory: accelerator models, node specs, pools, nodes, images and driver versions.

Capacities are stored in whole units the scheduler can add up exactly: CPU in millicores,
memory in MiB, accelerators in boards (a spec may ask for a virtual slice such as 0.5).
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

# A spec may ask for a virtual slice of one board: a half, a quarter or an eighth.
SLICE_DIVISORS = (2, 4, 8)


class VendorKind(models.TextChoices):
    GPU = "GPU", "GPU"
    MLU = "MLU", "MLU"
    NPU = "NPU", "NPU"
    CPU = "CPU", "CPU"


class RetirableQuerySet(models.QuerySet):
    def live(self):
        return self.filter(retired_at__isnull=True)


class Retirable(models.Model):
    retired_at = models.DateTimeField(_("retired"), null=True, blank=True)

    objects = RetirableQuerySet.as_manager()

    class Meta:
        abstract = True

    @property
    def retired(self) -> bool:
        return self.retired_at is not None

    def retire(self) -> None:
        self.retired_at = timezone.now()
        self.save(update_fields=["retired_at"])


class AcceleratorModel(Retirable):
    name = models.CharField(_("name"), max_length=64, unique=True)
    kind = models.CharField(_("kind"), max_length=3, choices=VendorKind, default=VendorKind.GPU)
    memory_gib = models.PositiveIntegerField(_("memory per board (GiB)"), default=0)

    class Meta:
        ordering = ["kind", "name"]
        verbose_name = _("accelerator model")
        verbose_name_plural = _("accelerator models")

    def __str__(self) -> str:
        return self.name

    def clean(self):
        if self.kind != VendorKind.CPU and not self.memory_gib:
            raise ValidationError({"memory_gib": _("An accelerator has memory: enter it in GiB.")})


class DriverVersion(Retirable):
    kind = models.CharField(_("kind"), max_length=3, choices=VendorKind, default=VendorKind.GPU)
    version = models.CharField(_("version"), max_length=64)

    class Meta:
        ordering = ["kind", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "version"], name="unique_driver_version")
        ]
        verbose_name = _("driver version")
        verbose_name_plural = _("driver versions")

    def __str__(self) -> str:
        return f"{self.kind} {self.version}"

    def clean(self):
        if self.kind == VendorKind.CPU:
            raise ValidationError({"kind": _("Only GPU, MLU and NPU boards have drivers.")})


class NodeSpec(Retirable):
    """What one node of a job gets: CPU, memory and boards of one accelerator model."""

    name = models.CharField(_("name"), max_length=64, unique=True)
    cpu_millicores = models.PositiveIntegerField(_("CPU (millicores)"))
    memory_mib = models.PositiveIntegerField(_("memory (MiB)"))
    accelerator_model = models.ForeignKey(
        AcceleratorModel,
        verbose_name=_("accelerator model"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="specs",
    )
    boards = models.DecimalField(_("boards"), max_digits=5, decimal_places=3, default=Decimal(0))
    description = models.CharField(_("description"), max_length=200, blank=True)

    class Meta:
        ordering = ["accelerator_model__name", "boards", "cpu_millicores", "name"]
        verbose_name = _("node spec")
        verbose_name_plural = _("node specs")
        constraints = [
            models.CheckConstraint(
                condition=Q(cpu_millicores__gt=0) & Q(memory_mib__gt=0) & Q(boards__gte=0),
                name="spec_positive_capacity",
            ),
            models.CheckConstraint(
                condition=Q(boards=0, accelerator_model__isnull=True)
                | Q(boards__gt=0, accelerator_model__isnull=False),
                name="spec_boards_need_model",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def kind(self) -> str:
        return self.accelerator_model.kind if self.accelerator_model_id else VendorKind.CPU

    @property
    def slots(self) -> int:
        """Processes one node of this spec runs: its whole boards, or 1 (SPEC L2, L4)."""
        return max(1, int(self.boards))

    @property
    def slice_divisor(self) -> int:
        """1 for whole boards; 2, 4 or 8 for a virtual slice of one board."""
        if self.boards and self.boards < 1:
            return round(1 / self.boards)
        return 1

    def summary(self) -> str:
        parts = [f"{self.cpu_millicores / 1000:g} CPU", f"{self.memory_mib / 1024:g} GiB"]
        if self.boards:
            parts.append(f"{self.boards.normalize():f} × {self.accelerator_model}")
        return " · ".join(parts)

    def clean(self):
        errors = {}
        if self.boards and not self.accelerator_model_id:
            errors["accelerator_model"] = _("Boards need an accelerator model.")
        if self.accelerator_model_id and not self.boards:
            errors["boards"] = _(
                "A spec with an accelerator model needs at least a slice of a board."
            )
        if self.boards and self.boards < 1:
            divisor = 1 / self.boards
            if divisor not in SLICE_DIVISORS:
                errors["boards"] = _(
                    "A virtual slice is 0.5, 0.25 or 0.125 of a board; use whole boards above 1."
                )
        elif self.boards and self.boards != int(self.boards):
            errors["boards"] = _("Above one board, use whole boards (1, 2, 4, 8…).")
        if errors:
            raise ValidationError(errors)


class ResourcePool(Retirable):
    """Dedicated nodes that only some projects may use (SPEC J12)."""

    name = models.CharField(_("name"), max_length=64, unique=True)
    description = models.CharField(_("description"), max_length=200, blank=True)
    projects = models.ManyToManyField(
        "console.Project", verbose_name=_("projects allowed"), blank=True, related_name="pools"
    )
    # Free disk its nodes need before a job starts (SPEC F1); empty: the site's limit.
    precheck_root_gb = models.PositiveIntegerField(_("free disk: root (GB)"), null=True, blank=True)
    precheck_shm_gb = models.PositiveIntegerField(
        _("free disk: /dev/shm (GB)"), null=True, blank=True
    )
    precheck_cache_gb = models.PositiveIntegerField(
        _("free disk: cache (GB)"), null=True, blank=True
    )

    class Meta:
        ordering = ["name"]
        verbose_name = _("resource pool")
        verbose_name_plural = _("resource pools")

    def __str__(self) -> str:
        return self.name


class NodeQuerySet(RetirableQuerySet):
    def visible_to(self, user):
        """Shared nodes, plus nodes of the pools the user's projects may use (admins: all)."""
        if user.is_staff:
            return self
        return self.filter(
            Q(pool__isnull=True) | Q(pool__projects__memberships__user=user)
        ).distinct()

    def schedulable(self):
        return self.live().filter(status=Node.Status.READY, cordoned=False)


class Node(Retirable):
    class Status(models.TextChoices):
        READY = "ready", _("Ready")
        NOT_READY = "not_ready", _("Not ready")

    name = models.CharField(_("name"), max_length=253, unique=True)
    status = models.CharField(_("status"), max_length=10, choices=Status, default=Status.READY)
    cordoned = models.BooleanField(
        _("cordoned"), default=False, help_text=_("No new jobs start here; running ones go on.")
    )
    source = models.CharField(
        _("source"), max_length=20, default="manual",
        help_text=_("The backend that reports this node, or “manual”."),
    )  # fmt: skip
    os_image = models.CharField(_("OS"), max_length=100, blank=True)
    kernel = models.CharField(_("kernel"), max_length=100, blank=True)
    cpu_millicores = models.PositiveIntegerField(_("CPU (millicores)"))
    memory_mib = models.PositiveIntegerField(_("memory (MiB)"))
    accelerator_model = models.ForeignKey(
        AcceleratorModel,
        verbose_name=_("accelerator model"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="nodes",
    )
    board_count = models.PositiveSmallIntegerField(_("boards"), default=0)
    slices_per_board = models.PositiveSmallIntegerField(
        _("virtual slices per board"), default=1,
        help_text=_("1 for whole boards; 2, 4 or 8 to share each board between jobs."),
    )  # fmt: skip
    driver_version = models.ForeignKey(
        DriverVersion,
        verbose_name=_("driver version"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="nodes",
    )
    labels = models.JSONField(_("labels"), default=dict, blank=True)
    pool = models.ForeignKey(
        ResourcePool,
        verbose_name=_("dedicated pool"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="nodes",
    )
    last_heartbeat = models.DateTimeField(_("last heartbeat"), null=True, blank=True)
    # The problems a cluster reports of the node (SPEC F2): its conditions other than Ready
    # that hold, as node-problem-detector sets them ([type, "reason: message"], ...).
    conditions = models.JSONField(_("problems reported"), default=list, blank=True)
    # Why the platform isolated it after a fault (SPEC F3): cordoned until an admin returns
    # it to service. Empty for a cordon an admin set by hand.
    isolated_reason = models.CharField(_("isolated because"), max_length=500, blank=True)
    isolated_said = models.JSONField(null=True, blank=True)
    isolated_at = models.DateTimeField(_("isolated at"), null=True, blank=True)
    # The cluster that reports the node and runs its jobs; None: the local backend (or a
    # node entered by hand).
    cluster = models.ForeignKey(
        "resources.Cluster", verbose_name=_("cluster"), null=True, blank=True,
        on_delete=models.PROTECT, related_name="nodes",
    )  # fmt: skip

    objects = NodeQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = _("node")
        verbose_name_plural = _("nodes")
        constraints = [
            models.CheckConstraint(
                condition=Q(board_count=0) | Q(accelerator_model__isnull=False),
                name="node_boards_need_model",
            ),
            models.CheckConstraint(
                condition=Q(slices_per_board__in=[1, *SLICE_DIVISORS]),
                name="node_slices_1_2_4_8",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def display_status(self) -> str:
        if self.retired:
            return _("retired")
        if self.cordoned:
            return _("isolated") if self.isolated_at else _("cordoned")
        return self.get_status_display()

    @property
    def slots(self) -> int:
        return self.board_count * self.slices_per_board

    def clean(self):
        errors = {}
        if self.board_count and not self.accelerator_model_id:
            errors["accelerator_model"] = _("Boards need an accelerator model.")
        if self.accelerator_model_id and not self.board_count:
            errors["board_count"] = _("A node with an accelerator model has at least one board.")
        if self.slices_per_board not in (1, *SLICE_DIVISORS):
            errors["slices_per_board"] = _("Slice boards into 1, 2, 4 or 8.")
        if (
            self.driver_version_id
            and self.accelerator_model_id
            and self.driver_version.kind != self.accelerator_model.kind
        ):
            errors["driver_version"] = _("This driver is for %(kind)s boards.") % {
                "kind": self.driver_version.kind
            }
        if errors:
            raise ValidationError(errors)


class ImageQuerySet(RetirableQuerySet):
    def for_training(self):
        """What a training job may pick (SPEC J13); the job form still checks board types."""
        return self.live().filter(scopes__contains=[Image.Scope.TRAINING])


class Image(Retirable):
    class Scope(models.TextChoices):
        TRAINING = "training", _("Training")
        DEVELOPMENT = "development", _("Development")
        INFERENCE = "inference", _("Inference")

    name = models.CharField(_("name"), max_length=100, unique=True)
    reference = models.CharField(
        _("reference"), max_length=255, unique=True,
        help_text=_("Registry reference, e.g. registry.example.com/pytorch:2.4-cuda12."),
    )  # fmt: skip
    scopes = ArrayField(
        models.CharField(max_length=12, choices=Scope), verbose_name=_("scopes"), default=list
    )
    board_kinds = ArrayField(
        models.CharField(max_length=3, choices=VendorKind),
        verbose_name=_("board types"),
        default=list,
        help_text=_("Which specs it runs on: GPU, MLU, NPU and/or CPU."),
    )
    description = models.CharField(_("description"), max_length=200, blank=True)
    # The local backend runs jobs as processes of its own machine, where an image is only a
    # name: this folder stands in for the image's Python (see resources.inventory.runtimes).
    local_runtime = models.CharField(
        _("local runtime"), max_length=500, blank=True,
        help_text=_(
            "A folder holding a Python environment for jobs the local backend runs with this "
            "image: its bin/ goes first on PATH. Blank: the machine's own Python."
        ),
    )  # fmt: skip
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = ImageQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = _("image")
        verbose_name_plural = _("images")

    def __str__(self) -> str:
        return self.name

    def clean(self):
        errors = {}
        if not self.scopes:
            errors["scopes"] = _("Pick at least one scope.")
        if not self.board_kinds:
            errors["board_kinds"] = _("Pick at least one board type.")
        if errors:
            raise ValidationError(errors)
