"""The job form's availability panel (SPEC J25) in the browser: it answers for the specs
and pool chosen on the form, follows them as they change, never leaves /jobs/new/, and
fits a desktop and a phone in English and Chinese. With the demo data, gpu-half gets the
same answer on the form, in the panel and on /cluster/."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from tests.browser.conftest import sized_tab

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(settings):
    settings.DEMO_MODE = True
    call_command("seed_demo", stdout=io.StringIO())


@pytest.fixture(params=[("en-US", 1280), ("zh-CN", 1280), ("en-US", 390), ("zh-CN", 390)],
                ids=["en-1280", "zh-1280", "en-390", "zh-390"])  # fmt: skip
def tab(request, chromium, live_server):
    with sized_tab(chromium, live_server, *request.param) as page:
        yield page
    assert not page.errors, page.errors


# Elements of the panel whose content is wider than their box (cut off or scrolled), and
# whether the panel or the page scrolls sideways.
OVERFLOW = """(panel) => {
  const cut = [];
  for (const el of panel.querySelectorAll("th, td, li, p, .card, .table-responsive")) {
    const text = el.textContent.trim().slice(0, 60);
    if (el.scrollWidth > el.clientWidth + 1) cut.push(`${el.tagName}: ${text}`);
  }
  return {
    cut,
    panel: panel.scrollWidth > panel.clientWidth + 1,
    page: document.documentElement.scrollWidth > window.innerWidth,
  };
}"""


def no_overflow(tab) -> None:
    found = tab.page.locator("[data-testid=form-availability]").evaluate(OVERFLOW)
    assert found == {"cut": [], "panel": False, "page": False}, (tab.name, found)


def shots(tab, what: str) -> None:
    """The whole page, and the panel alone to look at closely."""
    tab.shot(f"{what}-{tab.name}")
    tab.shot(f"{what}-panel-{tab.name}", "[data-testid=form-availability]")


def choose(page, spec: str, on: bool = True) -> None:
    box = page.locator("[data-testid=spec-choices] .form-check", has_text=spec).locator("input")
    box.check() if on else box.uncheck()


def test_the_panel_follows_the_form_and_stays_on_it(tab, demo):
    page = tab.page
    tab.log_in("alice", "demo")
    page.wait_for_url(re.compile(r"/$"))
    tab.goto("/jobs/new/")
    entries = page.evaluate("history.length")
    choose(page, "gpu-1")
    page.click("[data-testid=open-availability]")
    panel = page.locator("[data-testid=form-availability]")
    answers = panel.locator("[data-testid=fits-now]")
    expect(answers.locator("[data-spec=gpu-1] [data-place=shared]")).to_have_attribute(
        "data-state", "now"
    )
    # The shared nodes only (no pool chosen): not local-c, which is vision-reserved's.
    rows = panel.locator("tbody tr")
    expect(rows).to_have_count(5)
    assert sorted(rows.evaluate_all("rows => rows.map(r => r.dataset.node)")) == [
        "local-a", "local-b", "local-cpu", "local-d", "local-e",
    ]  # fmt: skip
    # Free now, but the queue comes first: the panel says so as the prediction does.
    submitted = answers.locator("[data-spec=gpu-1] [data-testid=submitted-now]")
    expect(submitted).to_have_attribute("data-state", "queue")
    expect(page.locator("[data-testid=prediction] [data-state=queue]")).to_be_visible()
    assert page.url.endswith("/jobs/new/")
    no_overflow(tab)
    shots(tab, "form-availability-gpu-1")

    # Another spec: the panel follows; gpu-half fits only in the pool, and both the panel
    # and the prediction beside Create say so, with where it could start.
    choose(page, "gpu-1", on=False)
    choose(page, "gpu-half")
    half = answers.locator("[data-spec=gpu-half] [data-place=shared]")
    expect(half).to_have_attribute("data-state", "never")
    expect(answers.locator("[data-spec=gpu-1]")).to_have_count(0)
    expect(half).to_contain_text("vision-reserved")
    expect(page.locator("[data-testid=prediction] [data-state=never]")).to_be_visible()
    expect(page.locator("[data-testid=refusal-hint]")).to_contain_text("vision-reserved")
    no_overflow(tab)
    shots(tab, "form-availability-gpu-half")

    # In the pool it starts now: the panel shows the pool's two nodes (local-c, sliced, is
    # the one that fits), the prediction agrees.
    page.select_option("#id_pool", label="vision-reserved")
    pool = answers.locator("[data-spec=gpu-half] [data-place=vision-reserved]")
    expect(pool).to_have_attribute("data-state", "now")
    expect(rows).to_have_count(2)
    expect(panel.locator("tbody tr[data-node=local-c]")).to_have_attribute("data-status", "idle")
    expect(page.locator("[data-testid=prediction] [data-state=now]")).to_be_visible()
    expect(answers.locator("[data-testid=submitted-now]")).to_have_attribute("data-state", "now")
    assert page.url.endswith("/jobs/new/")
    no_overflow(tab)
    shots(tab, "form-availability-pool")

    # A refresh of the form's body (another mode) keeps the panel open, and hiding it
    # brings the button back; the address never changed.
    page.select_option("#id_mode", "pytorch")
    expect(pool).to_have_attribute("data-state", "now")
    panel.locator("[data-testid=close-availability]").click()
    expect(page.locator("[data-testid=open-availability]")).to_be_visible()
    assert page.url.endswith("/jobs/new/")
    assert page.evaluate("history.length") == entries  # nothing pushed

    # /cluster/ says the same of gpu-half.
    tab.goto("/cluster/")
    page.locator("[data-testid=cluster-filters] .form-check", has_text="gpu-half").locator(
        "input"
    ).check()
    expect(page.locator("[data-testid=fits-now] [data-spec]")).to_have_count(1)
    cluster = page.locator("[data-testid=fits-now] [data-spec=gpu-half]")
    expect(cluster.locator("[data-place=shared]")).to_have_attribute("data-state", "never")
    expect(cluster.locator("[data-place=vision-reserved]")).to_have_attribute("data-state", "now")
    # Every node alice may use: the five shared and the pool's two.
    expect(page.locator("[data-testid=availability-table] tbody tr")).to_have_count(7)
    box = page.locator("[data-testid=availability-table]").locator("xpath=..")
    table = box.evaluate("box => box.scrollWidth > box.clientWidth + 1")
    assert not table, "the /cluster/ table scrolls sideways"
    tab.shot(f"cluster-gpu-half-{tab.name}")


@pytest.mark.parametrize("tab", [("en-US", 1280)], indirect=True, ids=["en-1280"])
def test_a_change_made_while_the_panel_asks_is_not_lost(tab, demo):
    """The panel swaps itself whole, and htmx forgets a delayed trigger of the element it
    replaces: a spec ticked while the panel's answer is on its way must still be answered."""
    page = tab.page
    tab.log_in("alice", "demo")
    page.wait_for_url(re.compile(r"/$"))
    tab.goto("/jobs/new/")
    choose(page, "gpu-1")
    page.click("[data-testid=open-availability]")
    answers = page.locator("[data-testid=form-availability] [data-testid=fits-now]")
    expect(answers.locator("[data-spec=gpu-1]")).to_have_count(1)

    held = []  # the first answer only; later ones pass

    def hold(route):
        route.continue_() if held else held.append(route)

    page.route("**/jobs/new/availability/", hold)
    choose(page, "gpu-1", on=False)
    while not held:  # the panel asks about no spec at all; its answer waits here
        page.wait_for_timeout(50)
    choose(page, "gpu-half")  # within the panel's delay: only the old panel saw it
    held[0].continue_()
    half = answers.locator("[data-spec=gpu-half] [data-place=shared]")
    expect(half).to_have_attribute("data-state", "never")
    expect(answers.locator("[data-spec=gpu-1]")).to_have_count(0)
    shots(tab, "form-availability-after-held-answer")
    # The held request may be given up for the newer one (htmx then logs its abort as an
    # error): that is this test's own doing, not the page's.
    tab.errors[:] = [e for e in tab.errors
                     if not e.startswith(("htmx:sendAbort,", "htmx:afterRequest,"))]  # fmt: skip
