"""What a running job's status does not say, on the job list and the job's page (SPEC G2,
G5): it runs on borrowed boards, or it was found idle; in English and Chinese."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.faults import idle
from jobs.models import Job
from tests.browser.conftest import logged_in, sized_tab
from tests.jobs.factories import JobFactory
from tests.jobs.test_elastic_growth import running_on
from tests.jobs.test_idle import used
from tests.resources.factories import NodeFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


WORDS = [("en-US", "idle", "borrowed boards"), ("zh-CN", "闲置", "借用板卡")]


@pytest.mark.parametrize(("locale", "idle_word", "borrowed_word"), WORDS)
def test_the_list_and_the_page_say_which_running_jobs_idle_or_borrow(
    chromium, live_server, alice, vision, run_cluster, locale, idle_word, borrowed_word
):
    node = NodeFactory(name="node-x", cpu_millicores=64000)
    spec = run_cluster["cpu"]
    attempts = {}
    for name in ("quiet", "busy", "borrower"):
        job = JobFactory(owner=alice, project=vision, name=name, specs=[spec])
        Job.objects.filter(pk=job.pk).update(spec=spec, borrowing=name == "borrower")
        attempts[name] = running_on(node, job)
    used(attempts["quiet"], 2.0, 3.0)
    used(attempts["busy"], 80.0, 95.0)
    used(attempts["borrower"], 70.0, 90.0)
    assert idle.watch() == [attempts["quiet"].pk]

    with sized_tab(chromium, live_server, locale, 1280) as tab:
        logged_in(tab, alice)
        tab.goto("/jobs/")
        rows = tab.page.get_by_test_id("job-table").locator("tbody tr")
        expect(rows.filter(has_text="quiet").get_by_test_id("idle")).to_have_text(idle_word)
        expect(rows.filter(has_text="busy").get_by_test_id("idle")).to_have_count(0)
        borrowed = rows.filter(has_text="borrower").get_by_test_id("borrowing")
        expect(borrowed).to_have_text(borrowed_word)
        tab.shot(f"idle-badges-list-{tab.name}")

        tab.goto(f"/jobs/{Job.objects.get(name='quiet').pk}/")
        badge = tab.page.locator("h1").get_by_test_id("idle")
        expect(badge).to_have_text(idle_word)
        assert ("Found idle at" if locale == "en-US" else "发现空闲") in badge.get_attribute(
            "title"
        )
        # A replica stored without a label (as attempts from before labels were) is named
        # on its log tab by its name, not left an empty button.
        log_tab = tab.page.get_by_role("group", name="Node" if locale == "en-US" else "节点")
        expect(log_tab.get_by_role("link")).to_have_text("worker-0")
        tab.shot(f"idle-badges-page-{tab.name}")
