"""Chromium, driven by Playwright, against the live test server.

The browser is Debian's ``chromium``; Playwright never downloads one. Without it these
tests are skipped with the reason (CI installs it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
# Screenshots are for a person to look at, and each costs Chromium about 0.4 s (a whole page
# laid out and encoded): the two hundred the browser tests take cost them about a minute
# (measured over a whole suite). So they are taken when asked for: `make screenshots`.
TAKE_SHOTS = bool(os.environ.get("SCREENSHOTS"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The tests that only drive pages run in Chromium's headless shell where it is installed
# (Debian's chromium-headless-shell, the same version): the same Blink, without the full
# browser's window machinery, at half its processor time (measured: 20 s against 38 s of
# Chromium's over the same 13 tests; all the browser tests in two processes, 203 s against
# 300 s). Screenshots, for a person to look at, are taken in the full browser.
SHELL = shutil.which("chromium-headless-shell")
BROWSER = CHROMIUM if TAKE_SHOTS or SHELL is None else SHELL
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
# between page actions are still plain synchronous code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def chromium():
    if not Path(BROWSER).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright

    # A page that is right only later than 5 s (Playwright's default) on a loaded two-core
    # machine is still right; a wrong page fails all the same, only later.
    expect.set_options(timeout=10_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=BROWSER, args=FLAGS)
        yield browser
        browser.close()


class Page:
    """A browser tab that records console errors (CSP violations among them)."""

    def __init__(self, page, base_url: str):
        self.page = page
        self.base_url = base_url
        self.errors: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(str(error)))

    def _console(self, message):
        if message.type == "error":
            self.errors.append(message.text)

    def goto(self, path: str):
        return self.page.goto(self.base_url + path)

    def log_in(self, username: str, password: str):
        self.goto("/login/")
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", password)
        self.page.click("main button[type=submit]")

    def shot(self, name: str, part: str = ""):
        """The whole page, or only ``part`` (a selector), as ``name``.png under
        SCREENSHOTS, when screenshots are asked for."""
        if TAKE_SHOTS:
            path = SCREENSHOTS / f"{name}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            # caret="initial": hiding the caret injects a style the page's CSP refuses.
            if part:
                self.page.locator(part).screenshot(path=path, caret="initial")
            else:
                self.page.screenshot(path=path, full_page=True, caret="initial")


@pytest.fixture
def page(chromium, live_server):
    context = chromium.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    tab = Page(context.new_page(), live_server.url)
    yield tab
    context.close()
    assert not tab.errors, tab.errors


@pytest.fixture
def asgi_page(chromium, asgi_web):
    """A tab against the web server as `make run` starts it (ASGI: the tools' proxy and the
    terminal's WebSocket live there), with the same console-error check as ``page``."""
    context = chromium.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    tab = Page(context.new_page(), asgi_web)
    yield tab
    context.close()
    assert not tab.errors, tab.errors  # CSP violations among them


@contextlib.contextmanager
def sized_tab(chromium, live_server, locale: str, width: int, height: int = 900):
    """A tab in ``locale`` (the browser's language) ``width`` pixels wide, named for its
    screenshots as ``en-1280``."""
    context = chromium.new_context(viewport={"width": width, "height": height}, locale=locale)
    page = Page(context.new_page(), live_server.url)
    page.name = f"{locale[:2]}-{width}"
    try:
        yield page
    finally:
        context.close()


def logged_in(page: Page, user) -> None:
    """The session cookie of a login made by Django's test client (the server is another
    process; its login form is tested elsewhere)."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    session = client.cookies["sessionid"].value
    page.page.context.add_cookies([{"name": "sessionid", "value": session, "url": page.base_url}])


@pytest.fixture
def beat(settings):
    """What beat's sync task does every few seconds, in a thread, for the test's length."""
    from jobs.execution import runs
    from tests.helpers import every

    settings.USAGE_SECONDS = 1
    with every(0.5, runs.sync):
        yield


@pytest.fixture
def demo(settings, transactional_db, tmp_path):
    """The demo's users, inventory, catalog and jobs, as `make run` seeds them (each demo
    image with a runtime, a stand-in one where this machine has not made it yet)."""
    import io

    from django.core.management import call_command

    from tests.helpers import give_images_runtimes

    settings.DEMO_MODE = True
    call_command("seed_demo", stdout=io.StringIO())
    give_images_runtimes(tmp_path / "stand-in-runtime")


def log_in_as(page: Page, username: str, language: str = "en"):
    """Log in with the demo password and, for "zh", switch the console to Chinese."""
    import re

    page.log_in(username, "demo")
    page.page.wait_for_url(re.compile(r"/$"))
    if language == "zh":
        page.page.click("button[aria-label=Language]")
        page.page.click("[data-testid=language-switcher] >> text=简体中文")
    return page.page
