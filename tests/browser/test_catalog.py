"""The catalog as alice and bob see it in Chromium: browse, favourite, create, fix, delete."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from resources.catalog import demo as catalog_demo
from resources.models import Dataset

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(settings, tmp_path, admin, lead, alice, bob, charlie, vision, speech):
    settings.STORAGE_ROOT = tmp_path / "storage"
    users = {"admin": admin, "lead": lead, "alice": alice, "bob": bob, "charlie": charlie}
    catalog_demo.seed(lambda line: None, users, {"vision": vision, "speech": speech})


def log_in(page, username, password):
    page.log_in(username, password)
    page.page.wait_for_url(re.compile(r"/$"))


def test_browse_and_favourite(page, demo, password):
    log_in(page, "alice", password)
    page.page.click("nav >> text=Catalog")
    page.page.wait_for_url(re.compile(r"/catalog/$"))
    expect(page.page.get_by_role("heading", name="Catalog", exact=True)).to_be_visible()
    assert page.page.inner_text("[data-testid=count-datasets-favourites]") == "1"
    page.shot("catalog-overview")

    page.page.click("[data-testid=card-datasets] >> text=Datasets")
    page.page.wait_for_url(re.compile(r"/catalog/datasets/$"))
    rows = page.page.locator("[data-testid=catalog-table] tbody tr")
    assert rows.count() == 2
    cifar = Dataset.objects.get(name="cifar10")
    star = page.page.locator(f"[data-testid=favourite-{cifar.pk}] button")
    assert star.get_attribute("aria-pressed") == "false"
    star.click()  # htmx: the star is swapped in place, the page stays
    page.page.wait_for_selector(f"[data-testid=favourite-{cifar.pk}] button[aria-pressed=true]")
    assert page.page.url.endswith("/catalog/datasets/")
    assert cifar.favourited_by.filter(username="alice").exists()
    page.shot("catalog-datasets")

    page.page.click("[data-testid=tabs] >> text=Favourites")
    # The tab is a link to another page: count its rows once it has loaded, not the old page's
    page.page.wait_for_url(re.compile(r"/catalog/datasets/\?show=favourites$"))
    expect(rows).to_have_count(2)
    page.page.get_by_role("link", name="imagenet-mini").click()
    page.page.wait_for_url(re.compile(r"/catalog/datasets/\d+/$"))
    assert page.page.inner_text("[data-testid=mount-target]") == (
        "/workspace/dataset/favorite/imagenet-mini/v1"
    )
    page.shot("catalog-detail-shared")


def test_create_fix_and_delete(page, demo, password):
    log_in(page, "alice", password)
    page.goto("/catalog/datasets/")
    page.page.click("main >> text=New dataset")
    page.page.wait_for_url(re.compile(r"/catalog/datasets/new/$"))
    page.page.fill("#id_name", "../coco 2017")
    page.page.fill("#id_description", "Common objects in context")
    page.page.fill("#id_path", "/data/coco")
    page.page.click("main button[type=submit]")
    expect(page.page.locator("#id_name.is-invalid")).to_be_visible()
    expect(page.page.locator("#id_path.is-invalid")).to_be_visible()
    assert page.page.input_value("#id_name") == "../coco 2017"
    assert page.page.input_value("#id_description") == "Common objects in context"
    assert page.page.input_value("#id_path") == "/data/coco"
    page.errors.clear()  # Chromium logs the 422 reply as a failed resource
    page.shot("catalog-form-errors")

    page.page.fill("#id_name", "coco")
    page.page.fill("#id_path", "users/alice/datasets/coco")
    page.page.click("main button[type=submit]")
    page.page.wait_for_url(re.compile(r"/catalog/datasets/\d+/$"))
    expect(page.page.locator(".alert-success")).to_be_visible()
    page.page.click("[data-testid=actions] >> text=Add version")
    page.page.fill("#id_name", "v1")
    page.page.click("main button[type=submit]")
    page.page.wait_for_url(re.compile(r"/catalog/datasets/\d+/$"))
    assert page.page.inner_text("[data-testid=mount-target]") == "/workspace/dataset/private/coco"
    assert "users/alice/datasets/coco/v1" in page.page.inner_text("[data-testid=versions]")
    page.shot("catalog-detail")

    page.page.click("[data-testid=actions] >> text=Delete")
    page.page.wait_for_url(re.compile(r"/delete/$"))
    page.shot("catalog-confirm-delete")
    page.page.click("[data-testid=confirm-delete] button[type=submit]")
    page.page.wait_for_url(re.compile(r"/catalog/datasets/$"))
    expect(page.page.locator(".alert-success")).to_be_visible()
    assert not Dataset.objects.filter(name="coco").exists()


def test_read_only_member_sees_no_edit(page, demo, password):
    log_in(page, "bob", password)
    cifar = Dataset.objects.get(name="cifar10")
    page.goto(f"/catalog/datasets/{cifar.pk}/")
    actions = page.page.locator("[data-testid=actions]")
    assert actions.get_by_text("Edit").count() == 0
    expect(page.page.locator("[data-testid=favourite-hint]")).to_be_visible()
    page.goto(f"/catalog/datasets/{cifar.pk}/edit/")
    expect(page.page.get_by_role("heading", name="You may not do this")).to_be_visible()
    page.errors.clear()


def test_a_star_clicked_too_often_says_why(page, demo, password, settings):
    """Over the rate limit, an htmx click shows the server's words, not a generic failure."""
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "catalog": (1, 600)}
    log_in(page, "alice", password)
    page.goto("/catalog/datasets/")
    cifar = Dataset.objects.get(name="cifar10")
    star = page.page.locator(f"[data-testid=favourite-{cifar.pk}] button")
    star.click()
    page.page.wait_for_selector(f"[data-testid=favourite-{cifar.pk}] button[aria-pressed=true]")
    star.click()
    alert = page.page.locator("#messages .alert-danger")
    alert.wait_for()
    assert "Too many catalog changes: at most 1 every 600 seconds" in alert.inner_text()
    assert all("429" in error for error in page.errors), page.errors
    page.errors.clear()  # Chromium and htmx log the 429 reply as a failed request
    # Nothing changed: the star is still on.
    assert star.get_attribute("aria-pressed") == "true"
    assert cifar.favourited_by.filter(username="alice").exists()
    page.shot("rate-limited-star")
