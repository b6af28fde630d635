"""SPEC W: where each catalog item lands in ``/workspace``, and what may be written to.

Most cases use unsaved objects: the rules need no database. Only "is it shared read-write
with this member?" asks one, and those tests say so.
"""

from __future__ import annotations

import os

import pytest

from console.sharing import Access
from resources.catalog import mounts
from resources.catalog.mounts import Mount, MountKind, UnsafePath
from resources.models import (
    Algorithm,
    TrainedModel,
    Volume,
)
from tests.resources.catalog_factories import DatasetVersionFactory, VolumeFactory
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


class TestFolderNames:
    @pytest.mark.parametrize(
        "name", ["cifar10", "a", "A-b_c.d", "v1.2", "imagenet-mini", "_x", "-x", "x" * 63]
    )
    def test_accepted(self, name):
        assert mounts.is_folder_name(name)

    @pytest.mark.parametrize(
        "name",
        ["", ".", "..", ".hidden", "a/b", "a b", "a\\b", "名字", "a\n", "x" * 64, "a:b", "~x"],
    )
    def test_refused(self, name):
        assert not mounts.is_folder_name(name)


class TestStoragePaths:
    @pytest.mark.parametrize(
        ("typed", "clean"),
        [
            ("datasets/cifar10", "datasets/cifar10"),
            (" datasets/cifar10/ ", "datasets/cifar10"),
            ("a//b/./c/", "a/b/c"),
            ("./a", "a"),
            ("a/.hidden", "a/.hidden"),
        ],
    )
    def test_cleaned(self, typed, clean):
        assert mounts.clean_storage_path(typed) == clean

    @pytest.mark.parametrize(
        ("typed", "code"),
        [
            ("", "empty"),
            ("   ", "empty"),
            (".", "empty"),
            ("./", "empty"),
            ("/etc", "absolute"),
            ("//srv/data", "absolute"),
            ("~/data", "absolute"),
            ("..", "parent"),
            ("../x", "parent"),
            ("a/../../x", "parent"),
            ("a/..", "parent"),
            ("a\\..\\b", "invalid"),
            ("a\x00b", "invalid"),
            ("a\nb", "invalid"),
        ],
    )
    def test_refused_with_a_reason(self, typed, code):
        with pytest.raises(UnsafePath) as caught:
            mounts.clean_storage_path(typed)
        assert caught.value.code == code

    def test_source_is_under_the_storage_root(self, root):
        assert mounts.storage_source("datasets/cifar10/v1") == root / "datasets/cifar10/v1"

    def test_explicit_root(self, tmp_path):
        assert mounts.storage_source("x", root=tmp_path) == tmp_path / "x"

    def test_symlink_out_of_the_root_is_refused(self, root, tmp_path):
        os.symlink(tmp_path, root / "escape")
        with pytest.raises(UnsafePath) as caught:
            mounts.storage_source("escape/secret")
        assert caught.value.code == "outside"

    def test_symlink_to_the_root_itself_is_refused(self, root):
        os.symlink(root, root / "loop")
        with pytest.raises(UnsafePath):
            mounts.storage_source("loop")

    def test_symlink_loop_is_refused_not_a_crash(self, root):
        os.symlink(root / "b", root / "a")
        os.symlink(root / "a", root / "b")
        with pytest.raises(UnsafePath) as caught:
            mounts.storage_source("a/data")
        assert caught.value.code == "loop"

    def test_symlink_inside_the_root_is_followed(self, root):
        (root / "real").mkdir()
        os.symlink(root / "real", root / "alias")
        assert mounts.storage_source("alias/x") == root / "real" / "x"


class TestTargets:
    """The layout of SPEC W, literally."""

    @pytest.mark.parametrize(
        ("target", "expected"),
        [
            (mounts.ALGORITHM_TARGET, "/workspace/algorithm"),
            (mounts.OUTPUTS_TARGET, "/workspace/outputs"),
            (mounts.annotation_target("coco"), "/workspace/anno_dataset/coco/annotation"),
            (mounts.dataset_target("coco", "v3", own=True), "/workspace/dataset/private/coco"),
            (
                mounts.dataset_target("coco", "v3", own=False),
                "/workspace/dataset/favorite/coco/v3",
            ),
            (
                mounts.model_target("r50", "v1", own=False, pretrained=True),
                "/workspace/model/pretrained/r50",
            ),
            (
                mounts.model_target("r50", "v1", own=True, pretrained=True),
                "/workspace/model/pretrained/r50",
            ),
            (
                mounts.model_target("r50", "v1", own=True, pretrained=False),
                "/workspace/model/private/r50",
            ),
            (
                mounts.model_target("r50", "v1", own=False, pretrained=False),
                "/workspace/model/favorite/r50/v1",
            ),
            (mounts.volume_target("scratch"), "/workspace/volume/scratch"),
        ],
    )
    def test_layout(self, target, expected):
        assert target == expected

    @pytest.mark.parametrize(
        "call",
        [
            lambda: mounts.annotation_target("../x"),
            lambda: mounts.dataset_target("a/b", "v1", own=True),
            lambda: mounts.dataset_target("ok", "../v1", own=False),
            lambda: mounts.model_target("ok", ".v", own=False, pretrained=False),
            lambda: mounts.model_target("", "v1", own=True, pretrained=False),
            lambda: mounts.volume_target(".."),
        ],
    )
    def test_unsafe_names_never_make_a_target(self, call):
        with pytest.raises(ValueError):
            call()

    def test_batch_subfolder(self):
        assert mounts.outputs_subfolder("train-job", 0) == "train-job-0"
        assert mounts.outputs_subfolder("train-job", 12) == "train-job-12"
        with pytest.raises(ValueError):
            mounts.outputs_subfolder("train-job", -1)


class TestAlgorithm:
    def test_mounted_at_algorithm_writable_by_default(self, root):
        algorithm = Algorithm(name="resnet-train", owner=OWNER, path="algorithms/resnet-train")
        assert mounts.mount_algorithm(algorithm, OWNER) == Mount(
            source=str(root / "algorithms/resnet-train"),
            target="/workspace/algorithm",
            read_only=False,
            kind="algorithm",
            label="resnet-train",
        )

    def test_read_only_on_request(self):
        algorithm = Algorithm(name="a", owner=OWNER, path="a")
        assert mounts.mount_algorithm(algorithm, OWNER, read_only=True).read_only

    def test_platform_wide_one_is_read_only_for_users(self):
        algorithm = Algorithm(name="ddp-sample", owner=STAFF, project=None, path="a")
        assert mounts.mount_algorithm(algorithm, OWNER).read_only
        assert not mounts.mount_algorithm(algorithm, STAFF).read_only


class TestAnnotation:
    def test_mounted_under_anno_dataset_read_only(self, root):
        mount = mounts.mount_annotation(annotation_version(), OWNER)
        assert mount.target == "/workspace/anno_dataset/cifar10-labels/annotation"
        assert mount.source == str(root / "annotations/cifar10-labels/v1")
        assert mount.read_only
        assert (mount.kind, mount.label) == ("annotation", "cifar10-labels/v1")

    def test_owner_may_ask_to_write(self):
        assert not mounts.mount_annotation(annotation_version(), OWNER, read_only=False).read_only


class TestDataset:
    def test_own_dataset_is_private_and_writable(self, root):
        mount = mounts.mount_dataset(dataset_version(), OWNER)
        assert mount == Mount(
            source=str(root / "datasets/cifar10/v2"),
            target="/workspace/dataset/private/cifar10",
            read_only=False,
            kind=MountKind.DATASET,
            label="cifar10/v2",
        )

    def test_own_dataset_read_only_on_request(self):
        assert mounts.mount_dataset(dataset_version(), OWNER, read_only=True).read_only

    def test_someone_elses_is_a_favourite_with_its_version(self):
        mount = mounts.mount_dataset(dataset_version(), OTHER, access=Access.READ_ONLY)
        assert mount.target == "/workspace/dataset/favorite/cifar10/v2"
        assert mount.read_only

    def test_shared_read_write_may_be_written(self):
        mount = mounts.mount_dataset(dataset_version(), OTHER, access=Access.READ_WRITE)
        assert mount.target == "/workspace/dataset/favorite/cifar10/v2"
        assert not mount.read_only

    def test_admin_mounting_a_users_dataset_sees_it_as_a_favourite(self):
        mount = mounts.mount_dataset(dataset_version(), STAFF)
        assert mount.target == "/workspace/dataset/favorite/cifar10/v2"
        assert not mount.read_only

    def test_platform_wide_dataset_is_read_only_for_users(self):
        version = dataset_version(owner=STAFF, project=None)
        assert mounts.mount_dataset(version, OTHER).read_only

    def test_a_bad_stored_path_is_refused(self):
        version = dataset_version()
        version.path = "../../etc"
        with pytest.raises(UnsafePath):
            mounts.mount_dataset(version, OWNER)


class TestModel:
    @pytest.mark.parametrize(
        ("owner", "kind", "target"),
        [
            (OWNER, TrainedModel.Kind.PRETRAINED, "/workspace/model/pretrained/resnet50"),
            (STAFF, TrainedModel.Kind.PRETRAINED, "/workspace/model/pretrained/resnet50"),
            (OWNER, TrainedModel.Kind.PRIVATE, "/workspace/model/private/resnet50"),
            (OTHER, TrainedModel.Kind.PRIVATE, "/workspace/model/favorite/resnet50/v1"),
        ],
    )
    def test_layout_and_always_read_only(self, root, owner, kind, target):
        mount = mounts.mount_model(model_version(owner=owner, kind=kind), OWNER)
        assert mount.target == target
        assert mount.read_only
        assert mount.source == str(root / "models/resnet50/v1")
        assert (mount.kind, mount.label) == ("model", "resnet50/v1")

    def test_read_only_even_for_admins(self):
        assert mounts.mount_model(model_version(), STAFF).read_only


class TestVolume:
    def test_own_volume_is_writable(self, root):
        volume = Volume(name="scratch", owner=OWNER, path="volumes/scratch")
        assert mounts.mount_volume(volume, OWNER) == Mount(
            source=str(root / "volumes/scratch"),
            target="/workspace/volume/scratch",
            read_only=False,
            kind="volume",
            label="scratch",
        )

    def test_read_only_on_request(self):
        volume = Volume(name="scratch", owner=OWNER, path="v")
        assert mounts.mount_volume(volume, OWNER, read_only=True).read_only

    def test_shared_read_only_is_mounted_read_only(self):
        volume = Volume(name="scratch", owner=OWNER, path="v")
        assert mounts.mount_volume(volume, OTHER, access=Access.READ_ONLY).read_only


@pytest.mark.django_db
class TestSharedItemsLookUpTheMembership:
    def test_member_writes_to_a_read_write_volume(self, alice, bob, vision):
        volume = VolumeFactory(owner=bob, project=vision, others_access=Access.READ_WRITE)
        assert not mounts.mount_volume(volume, alice).read_only

    def test_member_reads_a_read_only_volume(self, alice, bob, vision):
        volume = VolumeFactory(owner=bob, project=vision, others_access=Access.READ_ONLY)
        assert mounts.mount_volume(volume, alice).read_only

    def test_outsider_never_writes(self, charlie, bob, vision):
        volume = VolumeFactory(owner=bob, project=vision, others_access=Access.READ_WRITE)
        assert mounts.mount_volume(volume, charlie).read_only

    def test_member_dataset_through_mount_for(self, alice, bob, vision):
        version = DatasetVersionFactory(
            dataset__owner=bob, dataset__project=vision, dataset__name="imagenet-mini", name="v1"
        )
        mount = mounts.mount_for(version, alice)
        assert mount.target == "/workspace/dataset/favorite/imagenet-mini/v1"
        assert mount.read_only


class TestOutputs:
    def test_regular_job(self, root):
        assert mounts.mount_outputs("outputs/alice/run") == Mount(
            source=str(root / "outputs/alice/run"),
            target="/workspace/outputs",
            read_only=False,
            kind="outputs",
            label="outputs/alice/run",
        )

    def test_batch_subtask_gets_its_own_folder_at_the_same_target(self, root):
        first = mounts.mount_outputs("out", job_name="sweep", index=0)
        third = mounts.mount_outputs("out/", job_name="sweep", index=2)
        assert first.source == str(root / "out/sweep-0")
        assert third.source == str(root / "out/sweep-2")
        assert first.target == third.target == "/workspace/outputs"
        assert third.label == "sweep-2"

    @pytest.mark.parametrize("path", ["/tmp/out", "../out", ""])
    def test_unsafe_output_path(self, path):
        with pytest.raises(UnsafePath):
            mounts.mount_outputs(path)
