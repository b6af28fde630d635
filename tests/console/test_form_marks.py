"""Every other form marks what it requires, says what the mark means, and links errors to
their fields (one bad submit each)."""

from __future__ import annotations

import pytest

from tests.form_page import Page, legend_count
from tests.resources.factories import NodeFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_alice(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def as_admin(client, admin):
    client.force_login(admin)
    return client


class TestOtherForms:
    def test_catalog_form(self, as_alice):
        response = as_alice.post("/catalog/datasets/new/", {"name": ""})
        page = Page(response.content.decode())
        assert legend_count(page.html) == 1
        assert page.required("id_name") and not page.required("id_description")
        page.assert_linked_error("id_name", "required")

    def test_inventory_form(self, as_admin):
        response = as_admin.post("/settings/inventory/accelerators/new/", {"name": ""})
        page = Page(response.content.decode())
        assert legend_count(page.html) == 1
        page.assert_linked_error("id_name", "required")

    def test_cluster_form_marks_what_its_connection_needs(self, as_admin):
        html = as_admin.get("/settings/inventory/clusters/new/").content.decode()
        page = Page(html)
        assert legend_count(html) == 1
        assert page.required("id_name") and page.required("id_api_url")
        assert not page.required("id_kubeconfig")
        assert 'role="radiogroup" aria-required="true"' in html
        # An optional pool says so, in the console's words (Django's have no Chinese).
        assert "— none —" in html and "Select an option" not in html

    def test_fault_form(self, as_admin):
        NodeFactory(name="gpu-01")
        response = as_admin.post("/settings/faults/", {"node": "", "kind": "heartbeat"})
        page = Page(response.content.decode())
        assert legend_count(page.html) == 1
        assert not page.required("id_detail")
        page.assert_linked_error("id_node", "required")

    def test_settings_form(self, as_admin):
        response = as_admin.post("/settings/", {"max_resumes": ""})
        page = Page(response.content.decode())
        assert legend_count(page.html) == 1
        assert page.required("id_max_resumes")
        page.assert_linked_error("id_max_resumes", "required")

    def test_login_form(self, client):
        page = Page(client.get("/login/").content.decode())
        assert legend_count(page.html) == 1
        assert page.required("id_username") and page.required("id_password")
