"""The catalog pages: who may do what (SPEC P), what each page shows, and its cost in queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from console.sharing import Access
from resources.catalog.kinds import KINDS
from tests.resources.catalog_factories import (
    AlgorithmFactory,
    DatasetFactory,
    DatasetVersionFactory,
    VolumeFactory,
    make_item,
)

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(autouse=True)
def storage(settings, tmp_path):
    return settings.STORAGE_ROOT


class TestMissingActions:
    @pytest.mark.parametrize("slug", ["algorithms", "volumes"])
    def test_no_versions_for_unversioned_kinds(self, client, alice, vision, slug):
        item = make_item(slug, owner=alice, project=vision)
        client.force_login(alice)
        assert client.get(f"/catalog/{slug}/{item.pk}/versions/new/").status_code == 404

    @pytest.mark.parametrize("slug", ["annotations", "volumes"])
    def test_no_favourites_for_these_kinds(self, client, alice, vision, slug):
        item = make_item(slug, owner=alice, project=vision)
        client.force_login(alice)
        response = client.post(f"/catalog/{slug}/{item.pk}/favourite/", {"favourite": "1"})
        assert response.status_code == 404

    def test_unknown_kind_and_item(self, client, alice):
        client.force_login(alice)
        assert client.get("/catalog/things/").status_code == 404
        assert client.get("/catalog/datasets/999999/").status_code == 404


class TestPlatformWideItems:
    def test_everyone_sees_them_only_admins_change_them(self, client, admin, charlie):
        algorithm = AlgorithmFactory(owner=admin, project=None, name="ddp-sample")
        client.force_login(charlie)
        assert client.get(f"/catalog/algorithms/{algorithm.pk}/").status_code == 200
        assert client.get(f"/catalog/algorithms/{algorithm.pk}/edit/").status_code == 403
        client.force_login(admin)
        assert client.get(f"/catalog/algorithms/{algorithm.pk}/edit/").status_code == 200


# --- pages -----------------------------------------------------------------------------


class TestOverview:
    def test_anonymous_goes_to_login(self, client):
        response = client.get("/catalog/")
        assert response["Location"] == "/login/?next=/catalog/"

    def test_counts_per_kind_and_tab(self, client, alice, shelf):
        client.force_login(alice)
        response = client.get("/catalog/")
        assert response.status_code == 200
        counts = response.context["cards"]
        by_slug = {kind.slug: {tab: n for tab, _label, n in tabs} for kind, tabs in counts}
        assert by_slug["datasets"] == {"all": 2, "mine": 1, "favourites": 1}
        assert by_slug["models"] == {"all": 2, "mine": 1, "favourites": 0, "pretrained": 1}
        assert by_slug["volumes"] == {"all": 0, "mine": 0}
        body = response.content.decode()
        for kind in KINDS.values():
            assert f'data-testid="card-{kind.slug}"' in body
        assert "/workspace/dataset/" in body

    def test_htmx_gets_the_fragment(self, client, alice):
        client.force_login(alice)
        response = client.get("/catalog/", **HTMX)
        assert b"<html" not in response.content
        assert b"card-datasets" in response.content

    def test_navbar_links_here(self, client, alice):
        client.force_login(alice)
        body = client.get("/").content.decode()
        assert 'href="/catalog/"' in body


class TestList:
    def names(self, response) -> list[str]:
        return [item.name for item in response.context["page"].object_list]

    def test_all_i_can_use(self, client, alice, shelf):
        client.force_login(alice)
        response = client.get("/catalog/datasets/")
        assert response.status_code == 200
        assert self.names(response) == ["cifar10", "imagenet-mini"]

    def test_mine_and_favourites(self, client, alice, shelf):
        client.force_login(alice)
        assert self.names(client.get("/catalog/datasets/?show=mine")) == ["cifar10"]
        assert self.names(client.get("/catalog/datasets/?show=favourites")) == ["imagenet-mini"]

    def test_pretrained_tab_for_models_only(self, client, alice, shelf):
        client.force_login(alice)
        assert self.names(client.get("/catalog/models/?show=pretrained")) == ["resnet50"]
        # Elsewhere an unknown tab falls back to the first one.
        response = client.get("/catalog/datasets/?show=pretrained")
        assert response.context["tab"] == "all"

    def test_admin_sees_everything(self, client, admin, shelf):
        client.force_login(admin)
        names = self.names(client.get("/catalog/datasets/"))
        assert names == ["bobs-secret", "cifar10", "imagenet-mini", "speech-only"]

    def test_outsider_sees_only_their_projects(self, client, charlie, shelf):
        client.force_login(charlie)
        assert self.names(client.get("/catalog/datasets/")) == ["speech-only"]
        assert self.names(client.get("/catalog/models/")) == ["resnet50"]

    def test_search_and_project_filter(self, client, alice, shelf, vision):
        client.force_login(alice)
        assert self.names(client.get("/catalog/datasets/?q=IMAGE")) == ["imagenet-mini"]
        assert self.names(client.get(f"/catalog/models/?project={vision.pk}")) == ["cifar-resnet"]
        # A project one is not in is ignored rather than an error.
        response = client.get("/catalog/models/?project=999999")
        assert response.status_code == 200

    def test_rows_show_versions_sharing_and_favourite_state(self, client, alice, shelf):
        client.force_login(alice)
        body = client.get("/catalog/datasets/").content.decode()
        assert "and 1 more" in body  # cifar10: v2 (newest) and v1
        assert "Read-only" in body
        assert f'data-testid="favourite-{shelf["imagenet"].pk}"' in body
        assert 'aria-pressed="true"' in body and 'aria-pressed="false"' in body

    def test_empty_tabs_say_what_to_do(self, client, bob):
        client.force_login(bob)
        body = client.get("/catalog/volumes/?show=mine").content.decode()
        assert "You have no volumes yet." in body
        body = client.get("/catalog/datasets/?show=favourites").content.decode()
        assert "No favourites yet." in body

    def test_htmx_gets_the_fragment(self, client, alice, shelf):
        client.force_login(alice)
        response = client.get("/catalog/datasets/?show=mine", **HTMX)
        assert b"<html" not in response.content
        assert b"cifar10" in response.content

    def test_pages_of_fifty(self, client, alice, vision):
        DatasetFactory.create_batch(55, owner=alice, project=vision)
        client.force_login(alice)
        assert len(self.names(client.get("/catalog/datasets/"))) == 50
        assert len(self.names(client.get("/catalog/datasets/?page=2"))) == 5
        assert len(self.names(client.get("/catalog/datasets/?page=oops"))) == 50

    @pytest.mark.parametrize("slug", list(KINDS))
    def test_queries_do_not_grow_with_the_items(self, client, alice, bob, vision, slug):
        client.force_login(alice)

        def queries_for(count: int) -> int:
            for index in range(count):
                owner = alice if index % 2 else bob
                item = make_item(slug, owner=owner, project=vision)
                if KINDS[slug].favouritable and index % 3 == 0:
                    item.favourited_by.add(alice)
            with CaptureQueriesContext(connection) as captured:
                response = client.get(f"/catalog/{slug}/")
            assert response.status_code == 200
            return len(captured)

        few = queries_for(5)
        many = queries_for(45)  # 50 in all: one full page
        assert few == many == 6


class TestDetail:
    def test_owner_sees_everything_about_it(self, client, alice, shelf, storage):
        (storage / "d/cifar10").mkdir(parents=True)
        client.force_login(alice)
        response = client.get(f"/catalog/datasets/{shelf['cifar'].pk}/")
        body = response.content.decode()
        assert response.status_code == 200
        assert 'data-testid="storage-path">d/cifar10<' in body
        # Found; where it lies on the console's machine is for admins only.
        assert "folder found" in body and str(storage) not in body
        assert "Vision" in body and "Read-only" in body
        assert "/workspace/dataset/private/cifar10" in body
        # Newest version first.
        assert [version.name for version, _mount in response.context["planned"]] == ["v2", "v1"]
        assert "Edit" in body and "Delete" in body and "Add version" in body

    def test_an_admin_sees_the_folder_on_the_console_machine(self, client, admin, shelf, storage):
        (storage / "d/cifar10").mkdir(parents=True)
        client.force_login(admin)
        body = client.get(f"/catalog/datasets/{shelf['cifar'].pk}/").content.decode()
        assert str(storage / "d/cifar10") in body and "folder found" in body

    def test_member_sees_where_it_would_mount_for_them(self, client, bob, shelf):
        client.force_login(bob)
        body = client.get(f"/catalog/datasets/{shelf['cifar'].pk}/").content.decode()
        assert "/workspace/dataset/favorite/cifar10/v2" in body
        assert "/workspace/dataset/favorite/cifar10/v1" in body
        assert "read-only" in body
        assert 'data-testid="favourite-hint"' in body
        assert "/edit/" not in body and "/delete/" not in body

    def test_favourite_needs_no_hint(self, client, alice, shelf):
        client.force_login(alice)
        body = client.get(f"/catalog/datasets/{shelf['imagenet'].pk}/").content.decode()
        assert 'data-testid="favourite-hint"' not in body
        assert "★ Favourite" in body

    def test_pretrained_model(self, client, charlie, shelf):
        client.force_login(charlie)
        body = client.get(f"/catalog/models/{shelf['resnet50'].pk}/").content.decode()
        assert "/workspace/model/pretrained/resnet50" in body
        assert "Models are always mounted read-only." in body
        assert "platform-wide" in body

    def test_shared_read_write_volume_is_writable_for_members(self, client, alice, bob, vision):
        volume = VolumeFactory(
            owner=bob, project=vision, name="team-share", others_access=Access.READ_WRITE
        )
        client.force_login(alice)
        body = client.get(f"/catalog/volumes/{volume.pk}/").content.decode()
        assert "/workspace/volume/team-share" in body
        assert "writable" in body

    def test_algorithm_without_versions(self, client, alice, vision):
        algorithm = AlgorithmFactory(owner=alice, project=vision, name="resnet-train")
        client.force_login(alice)
        body = client.get(f"/catalog/algorithms/{algorithm.pk}/").content.decode()
        assert "/workspace/algorithm" in body
        assert 'id="versions-heading"' not in body

    def test_no_versions_yet(self, client, alice, vision):
        dataset = DatasetFactory(owner=alice, project=vision)
        client.force_login(alice)
        body = client.get(f"/catalog/datasets/{dataset.pk}/").content.decode()
        assert "No versions yet" in body

    def test_a_bad_row_is_explained_not_a_500(self, client, alice, vision):
        dataset = DatasetFactory(owner=alice, project=vision, name="bad name")
        DatasetVersionFactory(dataset=dataset, name="v1", path="../../etc")
        client.force_login(alice)
        response = client.get(f"/catalog/datasets/{dataset.pk}/")
        assert response.status_code == 200
        assert "It cannot be mounted as it is stored" in response.content.decode()


class TestFavouriteNext:
    @pytest.mark.parametrize("target", ["\u00b2", "-1", "https://evil.example/"])
    def test_goes_back_only_to_a_path_of_ours(self, client, alice, vision, target):
        item = make_item("datasets", owner=alice, project=vision)
        client.force_login(alice)
        url = f"/catalog/datasets/{item.pk}/favourite/"
        response = client.post(url, {"favourite": "1", "next": target})
        assert (response.status_code, response["Location"]) == (302, item.get_absolute_url())
        response = client.post(url, {"favourite": "1", "next": "/catalog/"})
        assert response["Location"] == "/catalog/"
