"""Before Create, when checkpoint resume would have nowhere to go after a fault: the warning
beside Create for a dedicated pool with no other node that has room, gone for a spec either
node can take, in English and Chinese, on a desktop and a phone."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from tests.browser.conftest import logged_in, sized_tab

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(params=[("en-US", 1280), ("zh-CN", 390)], ids=["en-1280", "zh-390"])
def tab(request, chromium, live_server):
    with sized_tab(chromium, live_server, *request.param, height=800) as page:
        yield page
    assert not page.errors, page.errors


def test_resume_in_a_pool_with_no_room_after_a_fault_is_warned(tab, settings):
    from django.contrib.auth import get_user_model

    settings.DEMO_MODE = True
    call_command("seed_demo", stdout=io.StringIO())
    logged_in(tab, get_user_model().objects.get(username="alice"))
    tab.goto("/jobs/new/")
    page = tab.page
    page.select_option("#id_mode", "pytorch")
    page.locator("[data-testid=spec-choices] .form-check", has_text="gpu-2").locator(
        "input"
    ).check()
    page.fill("#id_node_count", "2")
    page.select_option("#id_pool", label="vision-reserved")
    page.locator("#id_resume_enabled").check()
    caveat = page.locator("[data-testid=resume-caveat]")
    expect(caveat).to_contain_text("local-c")
    expect(caveat).to_contain_text("vision-reserved")
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    tab.shot(f"resume-caveat-{tab.name}")
    # One board a node: either node can take both after a fault, so no warning.
    page.locator("[data-testid=spec-choices] .form-check", has_text="gpu-2").locator(
        "input"
    ).uncheck()
    page.locator("[data-testid=spec-choices] .form-check", has_text="gpu-1").locator(
        "input"
    ).check()
    expect(caveat).to_have_count(0)
