"""Factories of the catalog: items of each kind, their versions, favourites."""

from __future__ import annotations

import factory

from console.sharing import Access
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
from tests.factories import ProjectFactory, UserFactory


class CatalogItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        abstract = True
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"item-{n}")
    owner = factory.SubFactory(UserFactory)
    project = factory.SubFactory(ProjectFactory)
    others_access = Access.READ_ONLY
    path = factory.LazyAttribute(lambda item: f"{item.owner.username}/{item.name}")


class FavouritableFactory(CatalogItemFactory):
    class Meta:
        abstract = True

    @factory.post_generation
    def favourited_by(item, create, extracted, **kwargs):
        """``DatasetFactory(favourited_by=[alice])``."""
        if create and extracted:
            item.favourited_by.add(*extracted)


class DatasetFactory(FavouritableFactory):
    class Meta:
        model = Dataset

    name = factory.Sequence(lambda n: f"dataset-{n}")


class AnnotationSetFactory(CatalogItemFactory):
    class Meta:
        model = AnnotationSet

    name = factory.Sequence(lambda n: f"labels-{n}")


class AlgorithmFactory(FavouritableFactory):
    class Meta:
        model = Algorithm

    name = factory.Sequence(lambda n: f"algorithm-{n}")


class TrainedModelFactory(FavouritableFactory):
    class Meta:
        model = TrainedModel

    name = factory.Sequence(lambda n: f"model-{n}")
    kind = TrainedModel.Kind.PRIVATE


class VolumeFactory(CatalogItemFactory):
    class Meta:
        model = Volume

    name = factory.Sequence(lambda n: f"volume-{n}")


class DatasetVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DatasetVersion

    dataset = factory.SubFactory(DatasetFactory)
    name = factory.Sequence(lambda n: f"v{n}")
    path = factory.LazyAttribute(lambda version: f"{version.dataset.path}/{version.name}")


class AnnotationVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AnnotationVersion

    annotation_set = factory.SubFactory(AnnotationSetFactory)
    name = factory.Sequence(lambda n: f"v{n}")
    path = factory.LazyAttribute(lambda version: f"{version.annotation_set.path}/{version.name}")


class ModelVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ModelVersion

    model = factory.SubFactory(TrainedModelFactory)
    name = factory.Sequence(lambda n: f"v{n}")
    path = factory.LazyAttribute(lambda version: f"{version.model.path}/{version.name}")


# By the catalog's address segment, for tests that run once per kind.
ITEM_FACTORIES = {
    "datasets": DatasetFactory,
    "annotations": AnnotationSetFactory,
    "algorithms": AlgorithmFactory,
    "models": TrainedModelFactory,
    "volumes": VolumeFactory,
}
VERSION_FACTORIES = {
    "datasets": (DatasetVersionFactory, "dataset"),
    "annotations": (AnnotationVersionFactory, "annotation_set"),
    "models": (ModelVersionFactory, "model"),
}


def make_item(slug: str, *, owner, project, access=Access.READ_ONLY, **fields):
    """An item of the kind, with one version "v1" where the kind has versions."""
    item = ITEM_FACTORIES[slug](owner=owner, project=project, others_access=access, **fields)
    if slug in VERSION_FACTORIES:
        factory, parent = VERSION_FACTORIES[slug]
        factory(**{parent: item}, name="v1")
    return item
