"""The catalog of what a job mounts: datasets, annotation sets, algorithms, models, volumes.

Each item has an owner, a project and an access level for the project's other members
(SPEC P). Items without a project (pretrained models, shared algorithms) are platform-wide
and readable by everyone. Each resolves to a mount under ``/workspace`` (SPEC W).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from console.modes import MAX_NODES, Mode, node_count_problem
from console.sharing import Access


class CatalogQuerySet(models.QuerySet):
    def visible_to(self, user):
        """What the user may mount: their own, platform-wide items, and what project members
        share with them."""
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self
        # A subquery rather than a join: no duplicate rows, so no DISTINCT to get in the way
        # of the counts and annotations the catalog pages add.
        from console.models import Membership

        their_projects = Membership.objects.filter(user=user).values("project_id")
        return self.filter(
            Q(owner=user)
            | Q(project__isnull=True)
            | (Q(project__in=their_projects) & ~Q(others_access=Access.NONE))
        )

    def mine(self, user):
        return self.filter(owner=user)

    def favourites_of(self, user):
        return self.visible_to(user).filter(favourited_by=user)

    def with_favourite(self, user):
        """Adds ``is_favourite`` (always False for kinds that cannot be favourites)."""
        if not hasattr(self.model, "favourited_by"):
            return self.annotate(is_favourite=models.Value(False))
        through = self.model.favourited_by.through
        column = f"{self.model._meta.model_name}_id"
        return self.annotate(
            is_favourite=models.Exists(
                through.objects.filter(**{column: models.OuterRef("pk"), "user_id": user.pk})
            )
        )


class CatalogItem(models.Model):
    name = models.CharField(
        _("name"), max_length=63,
        help_text=_("Letters, digits, “-” and “_”: it becomes a folder name in the job."),
    )  # fmt: skip
    description = models.CharField(_("description"), max_length=300, blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("owner"), on_delete=models.PROTECT,
        related_name="+",
    )  # fmt: skip
    project = models.ForeignKey(
        "console.Project", verbose_name=_("project"), null=True, blank=True,
        on_delete=models.PROTECT, related_name="+",
    )  # fmt: skip
    others_access = models.CharField(
        _("others' access"), max_length=10, choices=Access, default=Access.READ_ONLY
    )
    path = models.CharField(
        _("storage path"), max_length=500,
        help_text=_("Where its files live, relative to the storage root."),
    )  # fmt: skip
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    objects = CatalogQuerySet.as_manager()

    class Meta:
        abstract = True
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    address_slug = ""  # each kind's own: its pages are at /catalog/<address_slug>/

    def get_absolute_url(self) -> str:
        return reverse("catalog:detail", args=[self.address_slug, self.pk])

    def may_change(self, user) -> bool:
        """Editing and deleting: the owner and platform admins only, whatever the sharing."""
        return user.is_authenticated and (user.is_staff or self.owner_id == user.pk)

    def access_for(self, user) -> Access:
        """What this user may do with the item: the owner and admins everything."""
        if user.is_staff or self.owner_id == user.pk:
            return Access.READ_WRITE
        if self.project_id is None:
            return Access.READ_ONLY
        if self.project.memberships.filter(user=user).exists():
            return Access(self.others_access)
        return Access.NONE


class Favouritable(models.Model):
    favourited_by = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="+", verbose_name=_("favourite of")
    )

    class Meta:
        abstract = True


class Version(models.Model):
    """A named, stored state of a catalog item; ``parent`` names the item's field."""

    parent: str = ""
    name = models.CharField(_("version"), max_length=63)
    path = models.CharField(_("storage path"), max_length=500)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{getattr(self, self.parent).name}/{self.name}"


class Dataset(CatalogItem, Favouritable):
    address_slug = "datasets"  # /catalog/datasets/

    class Meta(CatalogItem.Meta):
        verbose_name = _("dataset")
        verbose_name_plural = _("datasets")


class DatasetVersion(Version):
    parent = "dataset"
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="versions")

    class Meta:
        ordering = ["dataset", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name"], name="unique_dataset_version")
        ]
        verbose_name = _("dataset version")
        verbose_name_plural = _("dataset versions")


class AnnotationSet(CatalogItem):
    address_slug = "annotations"  # /catalog/annotations/

    class Meta(CatalogItem.Meta):
        verbose_name = _("annotation dataset")
        verbose_name_plural = _("annotation datasets")


class AnnotationVersion(Version):
    parent = "annotation_set"
    annotation_set = models.ForeignKey(
        AnnotationSet, on_delete=models.CASCADE, related_name="versions"
    )

    class Meta:
        ordering = ["annotation_set", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["annotation_set", "name"], name="unique_annotation_version"
            )
        ]
        verbose_name = _("annotation version")
        verbose_name_plural = _("annotation versions")


class Algorithm(CatalogItem, Favouritable):
    address_slug = "algorithms"  # /catalog/algorithms/
    # Its suggested launch, all optional: what the job form offers when someone picks it,
    # so that a first job in its mode gets the image, mode, nodes and command it needs.
    suggested_command = models.TextField(
        _("run command"), blank=True,
        help_text=_("Filled in as the job's run command when someone picks this algorithm "
                    "and has not typed one, e.g. python /workspace/algorithm/train.py."),
    )  # fmt: skip
    suggested_image = models.ForeignKey(
        "resources.Image", verbose_name=_("image"), null=True, blank=True,
        on_delete=models.SET_NULL, related_name="+",
        help_text=_("The image it needs, with its framework."),
    )  # fmt: skip
    suggested_mode = models.CharField(
        _("distributed mode"), max_length=12, choices=Mode, blank=True,
        help_text=_("The distributed mode it is written for."),
    )  # fmt: skip
    suggested_nodes = models.PositiveSmallIntegerField(
        _("node count"), null=True, blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_NODES)],
        help_text=_("How many nodes it expects (a single-node job runs on one)."),
    )  # fmt: skip

    SUGGESTION_FIELDS = (
        "suggested_image",
        "suggested_mode",
        "suggested_nodes",
        "suggested_command",
    )

    class Meta(CatalogItem.Meta):
        verbose_name = _("algorithm")
        verbose_name_plural = _("algorithms")

    @property
    def has_suggestion(self) -> bool:
        return any(getattr(self, name) not in (None, "") for name in self.SUGGESTION_FIELDS)

    def clean(self):
        super().clean()
        # The job form's own rule, so that taking the suggestion never gives an error there.
        problem = node_count_problem(self.suggested_mode, self.suggested_nodes)
        if problem:
            raise ValidationError({"suggested_nodes": problem})


class TrainedModel(CatalogItem, Favouritable):
    """A model to mount read-only: pretrained (platform-wide) or trained by a user."""

    address_slug = "models"  # /catalog/models/

    class Kind(models.TextChoices):
        PRETRAINED = "pretrained", _("Pretrained")
        PRIVATE = "private", _("Trained")

    kind = models.CharField(_("kind"), max_length=10, choices=Kind, default=Kind.PRIVATE)

    class Meta(CatalogItem.Meta):
        verbose_name = _("model")
        verbose_name_plural = _("models")


class ModelVersion(Version):
    parent = "model"
    model = models.ForeignKey(TrainedModel, on_delete=models.CASCADE, related_name="versions")

    class Meta:
        ordering = ["model", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["model", "name"], name="unique_model_version")
        ]
        verbose_name = _("model version")
        verbose_name_plural = _("model versions")


class Volume(CatalogItem):
    address_slug = "volumes"  # /catalog/volumes/
    size_gib = models.PositiveIntegerField(_("size (GiB)"), default=10)

    class Meta(CatalogItem.Meta):
        verbose_name = _("volume")
        verbose_name_plural = _("volumes")
