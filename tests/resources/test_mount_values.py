"""SPEC W: the mount a catalog item makes, whatever its type (read-only defaults and what a
model always is), and mounts as values (frozen; two that land on the same target)."""

from __future__ import annotations

import dataclasses

import pytest

from resources.catalog import mounts
from resources.models import (
    Algorithm,
    Dataset,
    Volume,
)
from tests.resources.mount_helpers import (
    OTHER,
    OWNER,
    STAFF,
    annotation_version,
    dataset_version,
    model_version,
)


@pytest.fixture(autouse=True)
def root(settings):
    return settings.STORAGE_ROOT  # a temporary folder (tests/conftest.py)


class TestMountFor:
    @pytest.mark.parametrize(
        ("thing", "kind"),
        [
            (Algorithm(name="a", owner=OWNER, path="a"), "algorithm"),
            (Volume(name="v", owner=OWNER, path="v"), "volume"),
            (dataset_version(), "dataset"),
            (annotation_version(), "annotation"),
            (model_version(), "model"),
        ],
    )
    def test_dispatches_on_the_type(self, thing, kind):
        assert mounts.mount_for(thing, OWNER).kind == kind

    def test_kind_defaults_and_overrides(self):
        assert mounts.mount_for(annotation_version(), OWNER).read_only
        assert not mounts.mount_for(annotation_version(), OWNER, read_only=False).read_only
        assert mounts.mount_for(dataset_version(), OWNER, read_only=True).read_only
        # A model is read-only whatever is asked.
        assert mounts.mount_for(model_version(), OWNER, read_only=False).read_only

    def test_an_item_with_versions_must_be_given_a_version(self):
        with pytest.raises(TypeError):
            mounts.mount_for(Dataset(name="d", owner=OWNER, path="d"), OWNER)


class TestMountValue:
    def test_frozen(self):
        mount = mounts.mount_volume(Volume(name="v", owner=OWNER, path="v"), OWNER)
        with pytest.raises(dataclasses.FrozenInstanceError):
            mount.read_only = True  # type: ignore[misc]

    def test_duplicate_targets(self):
        mine = mounts.mount_dataset(dataset_version(name="coco"), OWNER)
        theirs = mounts.mount_dataset(dataset_version(name="coco", owner=OTHER), OWNER)
        other_owner_same_name = mounts.mount_dataset(
            dataset_version(name="coco", owner=STAFF), OWNER
        )
        assert mounts.duplicate_targets([mine, theirs]) == []
        assert mounts.duplicate_targets([mine, theirs, other_owner_same_name]) == [
            "/workspace/dataset/favorite/coco/v2"
        ]
