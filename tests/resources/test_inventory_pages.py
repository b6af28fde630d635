from decimal import Decimal

import pytest

from resources import hooks
from resources.models import Image, Node, NodeSpec
from tests.resources.factories import (
    AcceleratorModelFactory,
    AllocationFactory,
    NodeFactory,
    NodeSpecFactory,
)

pytestmark = pytest.mark.django_db

KINDS = ["accelerators", "drivers", "specs", "pools", "nodes", "images", "clusters"]


@pytest.mark.parametrize("kind", KINDS)
def test_only_admins(client, alice, admin, kind):
    assert client.get(f"/settings/inventory/{kind}/")["Location"].startswith("/login/")
    client.force_login(alice)
    assert client.get(f"/settings/inventory/{kind}/").status_code == 403
    assert client.post(f"/settings/inventory/{kind}/new/", {"name": "x"}).status_code == 403
    client.force_login(admin)
    assert client.get(f"/settings/inventory/{kind}/").status_code == 200
    assert client.get(f"/settings/inventory/{kind}/new/").status_code == 200


def test_unknown_kind_is_404(client, admin):
    client.force_login(admin)
    assert client.get("/settings/inventory/planets/").status_code == 404


class TestSpecForm:
    def post(self, client, **data):
        values = {"name": "a100x2", "cpu": "16", "memory_gib": "128", "boards": "2"}
        values.update(data)
        return client.post("/settings/inventory/specs/new/", values)

    def test_create_converts_units(self, client, admin):
        model = AcceleratorModelFactory()
        client.force_login(admin)
        response = self.post(client, accelerator_model=model.pk, cpu="7.5", memory_gib="0.5")
        assert response.status_code == 302
        spec = NodeSpec.objects.get()
        assert (spec.cpu_millicores, spec.memory_mib, spec.boards) == (7500, 512, Decimal(2))

    @pytest.mark.parametrize(
        ("data", "field", "message"),
        [
            ({"cpu": "-1"}, "cpu", "greater than or equal to 0.001"),
            ({"memory_gib": "0"}, "memory_gib", "greater than or equal to 0.001"),
            ({"boards": "2"}, "accelerator_model", "Boards need an accelerator model."),
            ({"boards": "0", "with_model": True}, "boards", "needs at least a slice"),
            ({"boards": "0.3", "with_model": True}, "boards", "0.5, 0.25 or 0.125"),
            ({"boards": "2.5", "with_model": True}, "boards", "use whole boards"),
        ],
    )
    def test_invalid_capacities_are_field_errors(self, client, admin, data, field, message):
        model = AcceleratorModelFactory()
        client.force_login(admin)
        if data.pop("with_model", False):
            data["accelerator_model"] = model.pk
        response = self.post(client, name="typed-name", **data)
        assert response.status_code == 422
        errors = response.context["form"].errors
        assert field in errors and message in " ".join(errors[field])
        assert 'value="typed-name"' in response.content.decode()
        assert not NodeSpec.objects.exists()


def test_image_needs_scopes_and_board_types(client, admin):
    client.force_login(admin)
    response = client.post("/settings/inventory/images/new/", {"name": "x", "reference": "r/x:1"})
    assert response.status_code == 422
    assert set(response.context["form"].errors) == {"scopes", "board_kinds"}
    response = client.post(
        "/settings/inventory/images/new/",
        {"name": "x", "reference": "r/x:1", "scopes": ["training"], "board_kinds": ["GPU"]},
    )
    assert response.status_code == 302
    assert Image.objects.get().scopes == ["training"]


def test_backend_node_edits_only_pool_and_cordon(client, admin):
    node = NodeFactory(source="kubernetes", cpu_millicores=4000)
    client.force_login(admin)
    page = client.get(f"/settings/inventory/nodes/{node.pk}/")
    assert set(page.context["form"].fields) == {"pool", "cordoned"}
    client.post(f"/settings/inventory/nodes/{node.pk}/", {"cordoned": "on", "cpu": "99"})
    node.refresh_from_db()
    assert node.cordoned and node.cpu_millicores == 4000


def test_node_with_boards_needs_a_model(client, admin):
    client.force_login(admin)
    response = client.post(
        "/settings/inventory/nodes/new/",
        {"name": "n1", "cpu": "8", "memory_gib": "32", "board_count": "4", "slices_per_board": "1"},
    )
    assert response.status_code == 422
    assert "accelerator_model" in response.context["form"].errors


class TestRetire:
    def test_node_in_use_is_refused_with_the_jobs(self, client, admin):
        node = NodeFactory()
        AllocationFactory(node=node, label="resnet-train")
        client.force_login(admin)
        page = client.get(f"/settings/inventory/nodes/{node.pk}/retire/")
        assert "resnet-train" in page.content.decode()
        response = client.post(f"/settings/inventory/nodes/{node.pk}/retire/")
        assert response.status_code == 409
        assert "is in use by live jobs" in response.content.decode()
        node.refresh_from_db()
        assert not node.retired

    def test_spec_in_use_per_the_jobs_app(self, client, admin):
        spec = NodeSpecFactory()
        hooks.usage_providers.append(lambda obj: [("job-42", "/jobs/42/")] if obj == spec else [])
        try:
            client.force_login(admin)
            response = client.post(f"/settings/inventory/specs/{spec.pk}/retire/")
            assert response.status_code == 409
            assert 'href="/jobs/42/"' in response.content.decode()
        finally:
            hooks.usage_providers.pop()

    def test_unused_is_retired_and_hidden(self, client, admin):
        node = NodeFactory(name="old-node")
        client.force_login(admin)
        assert client.post(f"/settings/inventory/nodes/{node.pk}/retire/").status_code == 302
        assert Node.objects.get(pk=node.pk).retired
        client.get("/settings/inventory/nodes/")  # shows the "Retired old-node." message
        assert "old-node" not in client.get("/settings/inventory/nodes/").content.decode()
        assert "old-node" in client.get("/settings/inventory/nodes/?retired=1").content.decode()
        assert client.post(f"/settings/inventory/nodes/{node.pk}/retire/").status_code == 404
