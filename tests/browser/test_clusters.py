"""An admin adds a cluster, makes a mistake, fixes it, and tests the connection (EN and zh,
desktop and phone widths), against the fake API server over TLS."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from resources.models import Cluster
from tests.browser.conftest import sized_tab
from tests.resources.cluster_helpers import certificate, with_tls
from tests.resources.factories import ResourcePoolFactory
from tests.resources.k8s_fake import TOKEN, FakeKubernetes, node

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def api():
    with with_tls(FakeKubernetes([node("gpu-01"), node("cpu-01")])) as fake:
        yield fake


@pytest.fixture
def root(db):
    return get_user_model().objects.create_user(
        "root", password="root-pass-123", is_staff=True, is_superuser=True
    )


@pytest.fixture(params=[("en-US", 1280), ("zh-CN", 1280), ("en-US", 390), ("zh-CN", 390)],
                ids=["en-1280", "zh-1280", "en-390", "zh-390"])  # fmt: skip
def tab(request, chromium, live_server):
    with sized_tab(chromium, live_server, *request.param) as page:
        yield page
    assert not page.errors, page.errors


def shot(tab, what: str, part: str = "") -> None:
    """The whole page, or only ``part`` (a selector), to look at closely."""
    tab.shot(f"clusters/{what}-{tab.name}", part)


def visible(tab, selector: str) -> bool:
    return tab.page.locator(selector).is_visible()


def test_admin_adds_and_tests_a_cluster(tab, root, api):
    ResourcePoolFactory(name="vision")
    page = tab.page
    tab.log_in("root", "root-pass-123")
    page.wait_for_url(re.compile(r"/$"))
    tab.goto("/settings/inventory/clusters/")
    page.click("a[href='/settings/inventory/clusters/new/']")
    page.wait_for_selector("#id_connection_0")

    # Only the chosen connection kind's fields show.
    assert page.is_checked("#id_connection_0")
    assert visible(tab, "#id_api_url") and not visible(tab, "#id_kubeconfig")
    page.check("#id_connection_1")
    assert visible(tab, "#id_kubeconfig") and not visible(tab, "#id_api_url")
    page.check("#id_connection_2")
    assert not visible(tab, "#id_kubeconfig") and not visible(tab, "#id_api_url")
    page.check("#id_connection_0")

    # A mistake: http, not https. What was typed comes back; the token must be typed again.
    page.fill("#id_name", "gpu-east")
    page.fill("#id_description", "A100 racks in the east hall")
    page.fill("#id_api_url", api.url.replace("https://", "http://"))
    page.fill("#id_ca_certificate", certificate()[0])
    page.fill("#id_token", TOKEN)
    page.fill("#id_namespace", "training")
    page.fill("#id_queue", "research")
    page.fill("#id_storage_claim", "console-storage")
    page.select_option("#id_default_pool", label="vision")
    page.click("[data-testid=inventory-form] button[type=submit]")
    page.wait_for_selector("#id_api_url.is-invalid")
    tab.errors.clear()  # Chromium logs the 422 reply as a failed resource
    assert page.input_value("#id_namespace") == "training"
    assert page.input_value("#id_description") == "A100 racks in the east hall"
    assert page.input_value("#id_token") == ""
    assert TOKEN not in page.content()
    assert visible(tab, "#id_token_helptext")
    shot(tab, "1-new-with-error")

    page.fill("#id_api_url", api.url)
    page.fill("#id_token", TOKEN)
    page.click("[data-testid=inventory-form] button[type=submit]")
    page.wait_for_url(re.compile(r"/settings/inventory/clusters/$"))
    cluster = Cluster.objects.get(name="gpu-east")
    assert cluster.token() == TOKEN
    row = page.locator("[data-testid=inventory-table] tbody tr").first
    assert api.url in row.inner_text()
    shot(tab, "2-list")

    # Test the connection: the outcome panel is swapped in.
    page.click(f"a[href='/settings/inventory/clusters/{cluster.pk}/']")
    page.wait_for_selector("[data-testid=test-connection]")
    assert not visible(tab, "#id_kubeconfig")
    api.forbidden = {("create", "", "pods/exec")}  # an account without the debug terminal
    page.click("[data-testid=test-connection]")
    page.wait_for_selector("[data-testid=version]")
    outcome = page.locator("[data-testid=cluster-outcome]").inner_text()
    assert "v1.31.2" in outcome
    assert "Volcano" in outcome
    assert "create pods/exec" in page.locator("[data-testid=optional-missing]").inner_text()
    terminal_note = "no debug terminal opens" if tab.name.startswith("en") else "无法打开调试终端"
    assert terminal_note in outcome
    api.forbidden = set()
    assert "/version" in "".join(api.requests)
    shot(tab, "3-tested")
    shot(tab, "3-tested-panel", "[data-testid=cluster-actions]")

    page.click("[data-testid=sync-nodes]")
    page.wait_for_selector("[data-testid=sync-counts]")
    assert "2" in page.locator("[data-testid=sync-counts]").inner_text()
    shot(tab, "4-synced", "[data-testid=cluster-actions]")
    tab.goto("/settings/inventory/clusters/")
    assert re.search(r"\b2\b", page.locator("[data-testid=inventory-table] tbody tr").inner_text())
    shot(tab, "5-list-synced")
