"""Catalog items for the mount tests, unsaved (the rules need no database): an owner, another
user and a platform admin, and versions of a dataset, a model and an annotation set."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from resources.models import (
    AnnotationSet,
    AnnotationVersion,
    Dataset,
    DatasetVersion,
    ModelVersion,
    TrainedModel,
)

User = get_user_model()


OWNER = User(pk=1, username="owner")


OTHER = User(pk=2, username="other")


STAFF = User(pk=3, username="staff", is_staff=True)


def dataset_version(name="cifar10", version="v2", owner=OWNER, **fields) -> DatasetVersion:
    dataset = Dataset(name=name, owner=owner, path=f"datasets/{name}", **fields)
    return DatasetVersion(dataset=dataset, name=version, path=f"datasets/{name}/{version}")


def model_version(name="resnet50", version="v1", owner=OWNER, kind=TrainedModel.Kind.PRIVATE):
    model = TrainedModel(name=name, owner=owner, path=f"models/{name}", kind=kind)
    return ModelVersion(model=model, name=version, path=f"models/{name}/{version}")


def annotation_version(name="cifar10-labels", version="v1", owner=OWNER) -> AnnotationVersion:
    labels = AnnotationSet(name=name, owner=owner, path=f"annotations/{name}")
    return AnnotationVersion(annotation_set=labels, name=version, path=f"annotations/{name}/v1")
