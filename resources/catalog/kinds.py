"""The five kinds of catalog item, declared once: addresses, pages, forms and the overview
are all driven from ``KINDS``."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models
from django.db.models import Q
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from resources.models import (
    Algorithm,
    AnnotationSet,
    AnnotationVersion,
    Dataset,
    DatasetVersion,
    ModelVersion,
    TrainedModel,
    Volume,
)


@dataclass(frozen=True)
class Kind:
    model: type[models.Model]
    title: Promise  # plural, for headings
    singular: Promise
    blurb: Promise  # what it is, on the overview
    layout: tuple[str, ...]  # where it lands in a job (SPEC W), shown on the overview
    version_model: type[models.Model] | None = None
    version_parent: str = ""  # the version's foreign key to the item
    extra_fields: tuple[str, ...] = ()  # model fields the form adds for this kind only

    @property
    def slug(self) -> str:
        """The address segment, /catalog/<slug>/ (the model's own: its pages link to it)."""
        return self.model.address_slug

    @property
    def versioned(self) -> bool:
        return self.version_model is not None

    @property
    def favouritable(self) -> bool:
        return hasattr(self.model, "favourited_by")

    def tab_filter(self, tab: str, user) -> Q:
        """What a tab of the list adds to ``visible_to(user)``."""
        if tab == "mine":
            return Q(owner=user)
        if tab == "favourites":
            return Q(favourited_by=user)
        if tab == "pretrained":
            return Q(kind=TrainedModel.Kind.PRETRAINED)
        return Q()

    @property
    def filters(self) -> list[tuple[str, Promise]]:
        """The list page's tabs, in order; the first is the default."""
        tabs = [("all", _("All I can use")), ("mine", _("Mine"))]
        if self.favouritable:
            tabs.append(("favourites", _("Favourites")))
        if self.model is TrainedModel:
            tabs.append(("pretrained", _("Pretrained")))
        return tabs


KINDS: dict[str, Kind] = {
    kind.slug: kind
    for kind in (
        Kind(
            Dataset,
            _("Datasets"),
            _("dataset"),
            _("Training data, in versions. Mount your own or a favourite, read-only or not."),
            ("/workspace/dataset/private/<name>", "/workspace/dataset/favorite/<name>/<version>"),
            DatasetVersion,
            "dataset",
        ),
        Kind(
            AnnotationSet,
            _("Annotation datasets"),
            _("annotation dataset"),
            _("Labels for a dataset, in versions. A job mounts one version of each."),
            ("/workspace/anno_dataset/<name>/annotation",),
            AnnotationVersion,
            "annotation_set",
        ),
        Kind(
            Algorithm,
            _("Algorithms"),
            _("algorithm"),
            _("The code a job runs. Each job (or batch sub-task) mounts one."),
            ("/workspace/algorithm",),
            extra_fields=Algorithm.SUGGESTION_FIELDS,
        ),
        Kind(
            TrainedModel,
            _("Models"),
            _("model"),
            _("Pretrained or trained weights, in versions. Always mounted read-only."),
            (
                "/workspace/model/pretrained/<name>",
                "/workspace/model/private/<name>",
                "/workspace/model/favorite/<name>/<version>",
            ),
            ModelVersion,
            "model",
            extra_fields=("kind",),
        ),
        Kind(
            Volume,
            _("Volumes"),
            _("volume"),
            _("Writable storage that outlives a job: caches, checkpoints, shared scratch."),
            ("/workspace/volume/<name>",),
            extra_fields=("size_gib",),
        ),
    )
}

_BY_MODEL = {kind.model: kind for kind in KINDS.values()}


def kind_of(item: models.Model) -> Kind:
    return _BY_MODEL[type(item)]


class KindConverter:
    """``<catalog_kind:kind>`` in an address: only the five slugs match, and views get the
    :class:`Kind` itself."""

    regex = "|".join(KINDS)

    def to_python(self, value: str) -> Kind:
        return KINDS[value]

    def to_url(self, value: Kind | str) -> str:
        slug = value.slug if isinstance(value, Kind) else value
        if slug not in KINDS:
            raise ValueError(slug)
        return slug
