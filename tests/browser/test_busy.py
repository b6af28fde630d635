"""What a person sees when the console is busy: the "busy, try again" page (a real pool with
every connection lent out), in English and Chinese, on a desktop and a phone."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import logged_in, sized_tab
from tests.console.test_busy import small_pool  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(params=[("en-US", 1280), ("zh-CN", 390)], ids=["en-1280", "zh-390"])
def tab(request, chromium, live_server):
    with sized_tab(chromium, live_server, *request.param, height=800) as page:
        yield page
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
