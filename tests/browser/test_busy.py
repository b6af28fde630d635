"""What a person sees when the console is busy, and before Create when checkpoint resume
would have nowhere to go: the "busy, try again" page (a real pool with every connection
lent out) and the resume warning beside Create, in English and Chinese, on a desktop and a
phone."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from tests.browser.conftest import Page, logged_in
from tests.console.test_busy import small_pool  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(params=[("en-US", 1280), ("zh-CN", 390)], ids=["en-1280", "zh-390"])
def tab(request, chromium, live_server):
    locale, width = request.param
    context = chromium.new_context(viewport={"width": width, "height": 800}, locale=locale)
    page = Page(context.new_page(), live_server.url)
    page.name = f"{locale[:2]}-{width}"
    yield page
    context.close()
    # The browser notes the 503 itself as a failed load: that is the page under test.
    assert not [e for e in page.errors if "503" not in e], page.errors


def test_the_busy_page_says_try_again_and_comes_back(tab, small_pool, alice):  # noqa: F811
    logged_in(tab, alice)
    tab.goto("/jobs/")
    small_pool.hold()
    answer = tab.goto("/queue/")
    assert answer.status == 503 and answer.headers["retry-after"] == "5"
    said = "控制台繁忙" if tab.name.startswith("zh") else "The console is busy"
    expect(tab.page.locator("h1")).to_have_text(said)
    expect(tab.page.locator("main a.btn")).to_have_attribute("href", "/queue/")
    assert tab.page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    tab.shot(f"busy-{tab.name}")
    small_pool.release()
    # It tries again by itself (the page's refresh): the queue is back.
    tab.page.wait_for_url(re.compile(r"/queue/$"), timeout=15000)
    expect(tab.page.locator("h1")).not_to_have_text(re.compile("busy|繁忙"), timeout=15000)


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
    caveat.scroll_into_view_if_needed()
    tab.shot(f"resume-caveat-{tab.name}")
    # One board a node: either node can take both after a fault, so no warning.
    page.locator("[data-testid=spec-choices] .form-check", has_text="gpu-2").locator(
        "input"
    ).uncheck()
    page.locator("[data-testid=spec-choices] .form-check", has_text="gpu-1").locator(
        "input"
    ).check()
    expect(caveat).to_have_count(0)
