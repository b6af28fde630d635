"""The catalog forms: folder-safe names, safe storage paths, the projects on offer, sharing."""

from __future__ import annotations

import os

import pytest

from console import limits
from console.sharing import Access
from resources.catalog.kinds import KINDS
from resources.forms.catalog import item_form_class, version_form_class
from resources.models import TrainedModel
from tests.resources.catalog_factories import (
    AlgorithmFactory,
    AnnotationSetFactory,
    DatasetFactory,
    DatasetVersionFactory,
    TrainedModelFactory,
    VolumeFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def storage(settings, tmp_path):
    return settings.STORAGE_ROOT


def item_form(slug="datasets", *, user, owner=None, instance=None, **data):
    fields = {
        "name": "coco",
        "description": "",
        "project": "",
        "others_access": Access.READ_ONLY,
        "path": "users/alice/datasets/coco",
        "size_gib": "10",
        "kind": TrainedModel.Kind.PRIVATE,
    }
    fields.update(data)
    form_class = item_form_class(KINDS[slug])
    return form_class(fields, kind=KINDS[slug], user=user, owner=owner or user, instance=instance)


class TestNames:
    @pytest.mark.parametrize("name", ["coco", "COCO-2017", "v1.0_final", "a"])
    def test_folder_safe_names_pass(self, alice, vision, name):
        form = item_form(user=alice, project=vision.pk, name=name)
        assert form.is_valid(), form.errors

    @pytest.mark.parametrize(
        "name", [".hidden", "..", "a/b", "a b", "数据", "x" * 64, "tab\there", "semi;colon"]
    )
    def test_others_are_refused_with_a_reason(self, alice, vision, name):
        form = item_form(user=alice, project=vision.pk, name=name)
        assert not form.is_valid()
        assert list(form.errors) == ["name"]

    def test_blank_name(self, alice, vision):
        form = item_form(user=alice, project=vision.pk, name="  ")
        assert form.errors["name"] == ["This field is required."]

    def test_surrounding_spaces_are_dropped(self, alice, vision):
        form = item_form(user=alice, project=vision.pk, name="  coco ")
        assert form.is_valid()
        assert form.cleaned_data["name"] == "coco"

    def test_unique_per_owner_and_kind_ignoring_case(self, alice, bob, vision):
        DatasetFactory(owner=alice, project=vision, name="coco")
        form = item_form(user=alice, project=vision.pk, name="Coco")
        assert not form.is_valid()
        assert form.errors["name"] == ["alice already has a dataset named “Coco”."]
        # Another owner, or another kind, may use the name.
        assert item_form(user=bob, project=vision.pk, path="users/bob/coco").is_valid()
        assert item_form("algorithms", user=alice, project=vision.pk).is_valid()

    def test_editing_keeps_its_own_name(self, alice, vision):
        dataset = DatasetFactory(owner=alice, project=vision, name="coco")
        form = item_form(user=alice, project=vision.pk, instance=dataset)
        assert form.is_valid(), form.errors

    def test_admin_editing_is_checked_against_the_owners_names(self, alice, admin, vision):
        DatasetFactory(owner=alice, project=vision, name="taken")
        dataset = DatasetFactory(owner=alice, project=vision, name="coco")
        form = item_form(user=admin, owner=alice, project=vision.pk, instance=dataset, name="taken")
        assert "name" in form.errors


class TestStoragePaths:
    @pytest.mark.parametrize(
        ("typed", "stored"),
        [
            ("users/alice/datasets/coco", "users/alice/datasets/coco"),
            ("./users//alice/b/", "users/alice/b"),
            (" users/alice/x ", "users/alice/x"),
        ],
    )
    def test_stored_in_canonical_form(self, alice, vision, typed, stored):
        form = item_form(user=alice, project=vision.pk, path=typed)
        assert form.is_valid(), form.errors
        assert form.save().path == stored

    @pytest.mark.parametrize(
        ("typed", "message"),
        [
            ("/etc/passwd", "no leading “/” or “~”"),
            ("~/data", "no leading “/” or “~”"),
            ("../../etc", "“..” is not allowed"),
            ("data/../../x", "“..” is not allowed"),
            (".", "Enter a folder under the storage root"),
            ("a\\b", "Backslashes"),
            ("a" * 501, "at most 500 characters"),
        ],
    )
    def test_unsafe_paths_are_refused(self, alice, vision, typed, message):
        form = item_form(user=alice, project=vision.pk, path=typed)
        assert not form.is_valid()
        assert list(form.errors) == ["path"]
        assert message in form.errors["path"][0]

    def test_symlink_out_of_the_storage_root(self, alice, vision, storage, tmp_path):
        os.symlink(tmp_path, storage / "out")
        form = item_form(user=alice, project=vision.pk, path="out/data")
        assert "leads outside the storage root" in form.errors["path"][0]

    def test_symlink_loop(self, alice, vision, storage):
        os.symlink(storage / "b", storage / "a")
        os.symlink(storage / "a", storage / "b")
        form = item_form(user=alice, project=vision.pk, path="a")
        assert "loop of symbolic links" in form.errors["path"][0]

    def test_help_names_the_storage_root(self, alice, storage):
        assert str(storage) in str(item_form(user=alice).fields["path"].help_text)


class TestProjects:
    def test_members_choose_among_their_projects(self, alice, vision, speech):
        form = item_form(user=alice, project=speech.pk)
        assert list(form.fields["project"].queryset) == [vision]
        assert "project" in form.errors

    def test_members_must_choose_one(self, alice, vision):
        form = item_form(user=alice, project="")
        assert form.errors["project"] == ["This field is required."]

    def test_admins_may_make_it_platform_wide(self, admin, vision, speech):
        form = item_form(user=admin, project="")
        assert form.is_valid(), form.errors
        assert set(form.fields["project"].queryset) == {vision, speech}
        assert form.save().project is None

    def test_the_items_project_stays_on_offer(self, alice, bob, speech):
        dataset = DatasetFactory(owner=alice, project=speech, name="coco")
        form = item_form(user=alice, project=speech.pk, instance=dataset)
        assert form.is_valid(), form.errors


class TestSharing:
    def test_all_three_levels_by_default(self, alice):
        choices = [value for value, _label in item_form(user=alice).fields["others_access"].choices]
        assert choices == ["none", "read_only", "read_write"]

    def test_only_none_when_sharing_is_off(self, alice, admin, vision):
        limits.save({"sharing_enabled": False}, admin)
        form = item_form(user=alice, project=vision.pk, others_access=Access.READ_ONLY)
        assert [value for value, _ in form.fields["others_access"].choices] == ["none"]
        assert "others_access" in form.errors
        unbound = item_form_class(KINDS["datasets"])(
            kind=KINDS["datasets"], user=alice, owner=alice
        )
        assert unbound.initial["others_access"] == Access.NONE


class TestKindSpecificFields:
    def test_only_admins_publish_pretrained_models(self, alice, admin, vision):
        assert "kind" not in item_form("models", user=alice).fields
        model = item_form("models", user=alice, project=vision.pk, kind="pretrained").save()
        assert model.kind == TrainedModel.Kind.PRIVATE
        form = item_form("models", user=admin, kind="pretrained")
        assert form.is_valid(), form.errors
        assert form.save().kind == TrainedModel.Kind.PRETRAINED

    def test_volume_size(self, alice, vision):
        assert item_form("volumes", user=alice, project=vision.pk, size_gib="0").errors == {
            "size_gib": ["Ensure this value is greater than or equal to 1."]
        }
        too_big = item_form("volumes", user=alice, project=vision.pk, size_gib=str(2**40))
        assert list(too_big.errors) == ["size_gib"]
        volume = item_form("volumes", user=alice, project=vision.pk, size_gib="50").save()
        assert volume.size_gib == 50

    def test_kinds_without_extra_fields(self, alice):
        for slug in ("datasets", "annotations"):
            fields = set(item_form(slug, user=alice).fields)
            assert fields == {"name", "description", "project", "others_access", "path"}
        algorithm = set(item_form("algorithms", user=alice).fields)
        assert algorithm == {"name", "description", "project", "others_access", "path",
                             "suggested_image", "suggested_mode", "suggested_nodes",
                             "suggested_command"}  # fmt: skip

    def test_failed_fields_are_marked_for_bootstrap(self, alice, vision):
        form = item_form(user=alice, project=vision.pk, name=".x")
        form.is_valid()
        assert form.fields["name"].widget.attrs["class"] == "form-control is-invalid"
        assert form.fields["path"].widget.attrs["class"] == "form-control"
        assert form.fields["project"].widget.attrs["class"] == "form-select"


def version_form(item, slug="datasets", **data):
    return version_form_class(KINDS[slug])(data, kind=KINDS[slug], item=item)


class TestVersions:
    def test_default_path_inside_the_item(self, alice, vision):
        dataset = DatasetFactory(owner=alice, project=vision, path="d/coco")
        version = version_form(dataset, name="v1", path="").save()
        assert (version.dataset, version.path) == (dataset, "d/coco/v1")

    def test_typed_path_is_cleaned(self, alice, vision):
        dataset = DatasetFactory(owner=alice, project=vision)
        saved = version_form(dataset, name="v1", path="users/alice/x//v1/").save()
        assert saved.path == "users/alice/x/v1"

    def test_each_kind_with_versions(self, alice, vision):
        labels = AnnotationSetFactory(owner=alice, project=vision)
        model = TrainedModelFactory(owner=alice, project=vision)
        assert version_form(labels, "annotations", name="v1").save().annotation_set == labels
        assert version_form(model, "models", name="v1").save().model == model

    def test_name_unique_within_the_item(self, alice, vision):
        version = DatasetVersionFactory(dataset__owner=alice, dataset__project=vision, name="v1")
        form = version_form(version.dataset, name="V1")
        assert form.errors["name"] == ["This dataset already has a version “V1”."]
        other = DatasetFactory(owner=alice, project=vision)
        assert version_form(other, name="v1").is_valid()

    @pytest.mark.parametrize("name", ["", "../v1", ".v1", "v 1"])
    def test_bad_names(self, alice, vision, name):
        dataset = DatasetFactory(owner=alice, project=vision)
        form = version_form(dataset, name=name, path="")
        assert list(form.errors) == ["name"]  # no default path to complain about

    @pytest.mark.parametrize("path", ["/abs", "../up", "a/../../b"])
    def test_bad_paths_even_with_a_bad_name(self, alice, vision, path):
        dataset = DatasetFactory(owner=alice, project=vision)
        assert set(version_form(dataset, name="v1", path=path).errors) == {"path"}
        assert set(version_form(dataset, name=".v", path=path).errors) == {"name", "path"}

    def test_default_path_too_long(self, alice, vision):
        algorithm_like = DatasetFactory(owner=alice, project=vision, path="a" * 499)
        form = version_form(algorithm_like, name="v1")
        assert "At most 500 characters" in form.errors["path"][0]


def test_factories_are_valid_for_every_kind(alice, vision):
    """The factories used across these tests make items the forms would accept."""
    algorithm = AlgorithmFactory(owner=alice, project=vision)
    form = item_form(
        "algorithms",
        user=alice,
        instance=algorithm,
        name=algorithm.name,
        project=vision.pk,
        path=algorithm.path,
    )
    assert form.is_valid(), form.errors


class TestOwnership:
    """A folder registered in the catalog opens it to others: only where one may write."""

    def test_another_users_folder_is_refused_with_whose_it_is(self, bob, vision):
        form = item_form(user=bob, project=vision.pk, path="users/alice/checkpoints")
        assert form.errors["path"] == [
            "This folder belongs to alice: you may not write there. Pick a folder in your "
            "own storage, users/bob/…, or in a volume shared with you read-write."
        ]

    def test_a_read_only_share_is_no_licence_to_register_it(self, alice, bob, vision):
        DatasetFactory(
            owner=alice, project=vision, name="cifar", path="users/alice/cifar",
            others_access=Access.READ_ONLY,
        )  # fmt: skip
        form = item_form(user=bob, project=vision.pk, path="users/alice/cifar/v1")
        assert "“cifar” (alice's) is shared with you read-only" in form.errors["path"][0]

    def test_inside_a_volume_shared_read_write(self, alice, bob, vision):
        VolumeFactory(
            owner=alice, project=vision, name="team", path="users/alice/team",
            others_access=Access.READ_WRITE,
        )  # fmt: skip
        assert item_form(user=bob, project=vision.pk, path="users/alice/team/data").is_valid()

    def test_platform_folders_are_for_admins(self, alice, admin):
        assert "Only platform admins" in item_form(user=alice, path="datasets/x").errors["path"][0]
        assert item_form(user=admin, path="datasets/x").is_valid()

    def test_a_version_lands_where_the_item_owner_may_write(self, alice, vision):
        dataset = DatasetFactory(owner=alice, project=vision, path="users/alice/d")
        assert version_form(dataset, name="v2").is_valid()
        assert "path" in version_form(dataset, name="v3", path="users/bob/v3").errors
