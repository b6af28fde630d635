"""/queue/ a page at a time in the browser, in English and Chinese: a lead walks to the
next page and back, finds their own job at once, and the pages keep the "only mine" filter."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.models import Job, Standing
from jobs.views.queue_pages import PAGE_SIZE
from tests.browser.conftest import log_in_as
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.browser

WORDS = {
    "en": {"next": "Next ›", "previous": "‹ Previous", "show": "Show it", "mine": "Only mine"},
    "zh": {"next": "下一页 ›", "previous": "‹ 上一页", "show": "跳转查看", "mine": "只看我的"},
}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_lead_pages_through_a_long_queue_and_finds_their_job(page, demo, language):
    from django.contrib.auth.models import User

    from console.models import Project

    vision = Project.objects.get(slug="vision")
    lead, alice = User.objects.get(username="lead"), User.objects.get(username="alice")
    queued = [
        JobFactory(owner=alice, project=vision, name=f"long-{i:02d}") for i in range(PAGE_SIZE + 12)
    ]
    own = JobFactory(owner=lead, project=vision, name="leads-own")
    for position, job in enumerate([*queued, own], start=1):
        Job.objects.filter(pk=job.pk).update(others_access="read_only")
        Standing.objects.filter(job=job).update(position=position)
    from jobs import permissions

    for job in queued:
        permissions.grant(Job.objects.get(pk=job.pk))
    words = WORDS[language]
    p = log_in_as(page, "lead", language)
    page.goto("/queue/")
    rows = p.locator("[data-testid=queue-table] tbody tr")
    expect(rows).to_have_count(PAGE_SIZE)
    expect(rows.first).to_have_attribute("data-job", "long-00")
    page.shot(f"queue-pages-{language}")

    p.get_by_role("link", name=words["next"]).click()
    expect(rows.first).to_have_attribute("data-job", f"long-{PAGE_SIZE:02d}")
    expect(p.locator("[data-job=leads-own]")).to_be_visible()
    p.get_by_role("link", name=words["previous"]).click()
    expect(rows.first).to_have_attribute("data-job", "long-00")

    p.locator("[data-testid=yours]").get_by_role("link", name=words["show"]).click()
    expect(rows.first).to_have_attribute("data-job", "leads-own")
    expect(rows.first).to_have_attribute("aria-current", "true")
    page.shot(f"queue-pages-yours-{language}")

    p.get_by_role("link", name=words["mine"]).click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-job", "leads-own")
