"""Catalog pages that change things: create, edit, delete, add a version, favourite."""

from __future__ import annotations

import pytest

from console.sharing import Access
from resources.catalog.kinds import KINDS
from resources.models import Dataset, DatasetVersion, TrainedModel
from tests.resources.catalog_factories import (
    DatasetFactory,
    make_item,
)

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def item_data(**overrides) -> dict:
    data = {
        "name": "coco",
        "description": "Common objects",
        "project": "",
        "others_access": Access.READ_ONLY,
        "path": "users/alice/datasets/coco",
    }
    data.update(overrides)
    return data


class TestCreate:
    def test_form_defaults_to_the_current_project(self, client, alice, vision, speech):
        from tests.factories import MembershipFactory

        MembershipFactory(project=speech, user=alice)
        client.force_login(alice)
        client.post("/projects/switch/", {"project": speech.pk, "next": "/"})
        response = client.get("/catalog/datasets/new/")
        assert response.status_code == 200
        assert response.context["form"]["project"].value() == speech.pk

    def test_creates_an_item_owned_by_the_user(self, client, alice, vision):
        client.force_login(alice)
        response = client.post("/catalog/datasets/new/", item_data(project=vision.pk))
        dataset = Dataset.objects.get(name="coco")
        assert response.status_code == 302
        assert response["Location"] == f"/catalog/datasets/{dataset.pk}/"
        assert (dataset.owner, dataset.project, dataset.path) == (
            alice,
            vision,
            "users/alice/datasets/coco",
        )

    @pytest.mark.parametrize("slug", list(KINDS))
    def test_every_kind(self, client, alice, vision, slug):
        client.force_login(alice)
        data = item_data(project=vision.pk, size_gib=5, kind="pretrained")
        response = client.post(f"/catalog/{slug}/new/", data)
        assert response.status_code == 302
        item = KINDS[slug].model.objects.get(name="coco")
        if slug == "models":
            assert item.kind == TrainedModel.Kind.PRIVATE  # only admins publish pretrained

    def test_bad_name_and_path_keep_what_was_typed(self, client, alice, vision):
        client.force_login(alice)
        data = item_data(name="../evil name", path="/etc/passwd", project=vision.pk)
        response = client.post("/catalog/datasets/new/", data)
        assert response.status_code == 422
        form = response.context["form"]
        assert set(form.errors) == {"name", "path"}
        body = response.content.decode()
        assert 'value="../evil name"' in body and 'value="/etc/passwd"' in body
        assert "Common objects" in body
        assert "is-invalid" in body
        assert "no leading “/” or “~”" in body
        assert not Dataset.objects.exists()

    def test_htmx_post_with_errors_gets_the_fragment(self, client, alice, vision):
        client.force_login(alice)
        response = client.post("/catalog/datasets/new/", item_data(path="../x"), **HTMX)
        assert response.status_code == 422
        assert b"<html" not in response.content

    def test_outsider_cannot_put_it_in_a_foreign_project(self, client, charlie, vision):
        client.force_login(charlie)
        response = client.post("/catalog/datasets/new/", item_data(project=vision.pk))
        assert response.status_code == 422
        assert "project" in response.context["form"].errors

    def test_user_without_project_is_told(self, client, db):
        from tests.factories import UserFactory

        client.force_login(UserFactory(username="newcomer"))
        response = client.get("/catalog/datasets/new/")
        assert "You are not in any project yet" in response.content.decode()

    def test_admin_may_create_platform_wide(self, client, admin):
        client.force_login(admin)
        response = client.post("/catalog/models/new/", item_data(kind="pretrained"))
        assert response.status_code == 302
        model = TrainedModel.objects.get()
        assert (model.project, model.kind, model.owner) == (None, "pretrained", admin)

    def test_get_only_and_post(self, client, alice):
        client.force_login(alice)
        assert client.put("/catalog/datasets/new/").status_code == 405


class TestEdit:
    def test_owner_edits(self, client, alice, vision, shelf):
        client.force_login(alice)
        data = item_data(name="cifar-10", project=vision.pk, path="users/alice/d/cifar-10")
        response = client.post(f"/catalog/datasets/{shelf['cifar'].pk}/edit/", data)
        assert response.status_code == 302
        shelf["cifar"].refresh_from_db()
        assert (shelf["cifar"].name, shelf["cifar"].path) == ("cifar-10", "users/alice/d/cifar-10")
        assert shelf["cifar"].owner == alice

    def test_admin_edits_and_the_owner_stays(self, client, admin, alice, vision, shelf):
        client.force_login(admin)
        data = item_data(name="cifar10", project=vision.pk, others_access="none")
        response = client.post(f"/catalog/datasets/{shelf['cifar'].pk}/edit/", data)
        assert response.status_code == 302
        shelf["cifar"].refresh_from_db()
        assert (shelf["cifar"].owner, shelf["cifar"].others_access) == (alice, "none")

    def test_name_taken_by_another_of_the_owners(self, client, alice, vision, shelf):
        DatasetFactory(owner=alice, project=vision, name="mnist")
        client.force_login(alice)
        data = item_data(name="MNIST", project=vision.pk, path="x")
        response = client.post(f"/catalog/datasets/{shelf['cifar'].pk}/edit/", data)
        assert response.status_code == 422
        assert "alice already has a dataset named “MNIST”." in response.content.decode()
        # The heading shows the stored name; the field shows what was typed.
        assert response.context["item"].name == "cifar10"
        assert 'value="MNIST"' in response.content.decode()


class TestDelete:
    def test_confirm_then_delete(self, client, alice, shelf):
        client.force_login(alice)
        url = f"/catalog/datasets/{shelf['cifar'].pk}/delete/"
        body = client.get(url).content.decode()
        assert "Delete the dataset “cifar10”?" in body
        assert "Its 2 versions go with it." in body
        response = client.post(url)
        assert response.status_code == 302
        assert response["Location"] == "/catalog/datasets/"
        assert not Dataset.objects.filter(pk=shelf["cifar"].pk).exists()
        assert not DatasetVersion.objects.filter(dataset_id=shelf["cifar"].pk).exists()

    def test_htmx_delete_navigates(self, client, admin, shelf):
        client.force_login(admin)
        response = client.post(f"/catalog/datasets/{shelf['cifar'].pk}/delete/", **HTMX)
        assert response.status_code == 204
        assert response["HX-Location"] == "/catalog/datasets/"


class TestAddVersion:
    def test_default_path_is_inside_the_items_folder(self, client, alice, shelf):
        client.force_login(alice)
        url = f"/catalog/datasets/{shelf['cifar'].pk}/versions/new/"
        response = client.post(url, {"name": "v3", "path": ""})
        assert response.status_code == 302
        version = shelf["cifar"].versions.get(name="v3")
        assert version.path == "d/cifar10/v3"

    def test_models_and_annotations_too(self, client, alice, vision):
        client.force_login(alice)
        for slug in ("models", "annotations"):
            item = make_item(slug, owner=alice, project=vision)
            url = f"/catalog/{slug}/{item.pk}/versions/new/"
            assert client.post(url, {"name": "v9", "path": "users/alice/x/v9"}).status_code == 302
            assert item.versions.get(name="v9").path == "users/alice/x/v9"

    def test_errors_keep_what_was_typed(self, client, alice, shelf):
        client.force_login(alice)
        url = f"/catalog/datasets/{shelf['cifar'].pk}/versions/new/"
        response = client.post(url, {"name": "v1", "path": "a/../../b"})
        assert response.status_code == 422
        assert set(response.context["form"].errors) == {"name", "path"}
        body = response.content.decode()
        assert 'value="a/../../b"' in body
        assert "already has a version “v1”" in body

    def test_a_version_added_meanwhile_is_a_field_error(self, client, alice, shelf, monkeypatch):
        from resources.forms.catalog import VersionForm

        # The check passes, then someone else's identical version reaches the table first.
        monkeypatch.setattr(VersionForm, "clean_name", lambda form: form.cleaned_data["name"])
        client.force_login(alice)
        url = f"/catalog/datasets/{shelf['cifar'].pk}/versions/new/"
        response = client.post(url, {"name": "v1", "path": ""})
        assert response.status_code == 422
        assert "was added meanwhile" in response.content.decode()


class TestFavourite:
    def url(self, item) -> str:
        return f"/catalog/datasets/{item.pk}/favourite/"

    def test_htmx_swaps_the_button(self, client, bob, shelf):
        client.force_login(bob)
        response = client.post(self.url(shelf["cifar"]), {"favourite": "1"}, **HTMX)
        assert response.status_code == 200
        body = response.content.decode()
        assert body.lstrip().startswith("<form")
        assert 'aria-pressed="true"' in body and "<html" not in body
        assert shelf["cifar"].favourited_by.filter(pk=bob.pk).exists()

    def test_compact_star_stays_compact(self, client, bob, shelf):
        client.force_login(bob)
        response = client.post(self.url(shelf["cifar"]), {"favourite": "1", "compact": "1"}, **HTMX)
        assert "favourite-star is-favourite" in response.content.decode()

    def test_without_javascript_back_where_it_was(self, client, alice, shelf):
        client.force_login(alice)
        data = {"favourite": "0", "next": "/catalog/datasets/?show=favourites"}
        response = client.post(self.url(shelf["imagenet"]), data)
        assert response.status_code == 302
        assert response["Location"] == "/catalog/datasets/?show=favourites"
        assert not shelf["imagenet"].favourited_by.filter(pk=alice.pk).exists()
        assert "no longer a favourite" in client.get(response["Location"]).content.decode()

    def test_offsite_next_is_ignored(self, client, alice, shelf):
        client.force_login(alice)
        data = {"favourite": "1", "next": "https://evil.example/"}
        response = client.post(self.url(shelf["cifar"]), data)
        assert response["Location"] == f"/catalog/datasets/{shelf['cifar'].pk}/"

    def test_sets_the_state_so_a_double_click_is_harmless(self, client, alice, shelf):
        client.force_login(alice)
        for _ in range(2):
            client.post(self.url(shelf["cifar"]), {"favourite": "1"})
        assert list(shelf["cifar"].favourited_by.all()) == [alice]

    def test_get_is_not_allowed(self, client, alice, shelf):
        client.force_login(alice)
        assert client.get(self.url(shelf["cifar"])).status_code == 405
