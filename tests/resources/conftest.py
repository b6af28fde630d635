"""Fixtures shared by the catalog's view tests."""

import pytest

from console.sharing import Access
from resources.models import TrainedModel
from tests.resources.catalog_factories import (
    DatasetFactory,
    DatasetVersionFactory,
    ModelVersionFactory,
    TrainedModelFactory,
)


@pytest.fixture
def shelf(alice, bob, lead, admin, vision, speech):
    """A bit of everything, as seen from alice's chair."""
    cifar = DatasetFactory(owner=alice, project=vision, name="cifar10", path="d/cifar10")
    DatasetVersionFactory(dataset=cifar, name="v1")
    DatasetVersionFactory(dataset=cifar, name="v2")
    imagenet = DatasetFactory(
        owner=bob, project=vision, name="imagenet-mini", favourited_by=[alice]
    )
    DatasetVersionFactory(dataset=imagenet, name="v1")
    DatasetFactory(owner=bob, project=vision, name="bobs-secret", others_access=Access.NONE)
    DatasetFactory(owner=lead, project=speech, name="speech-only")
    resnet50 = TrainedModelFactory(
        owner=admin, project=None, name="resnet50", kind=TrainedModel.Kind.PRETRAINED
    )
    ModelVersionFactory(model=resnet50, name="v1")
    TrainedModelFactory(owner=alice, project=vision, name="cifar-resnet")
    return {"cifar": cifar, "imagenet": imagenet, "resnet50": resnet50}
