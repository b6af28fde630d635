"""Quotas in the browser (SPEC G1), in English and Chinese: the admin raises a project's
guarantee beyond its department's, reads why it is refused on the field, fixes it and finds
the change in the history; the lead then reads the team's quota on the queue page."""

from __future__ import annotations

import pytest
from django.utils.timezone import now
from playwright.sync_api import expect

from jobs.admission.db import run_pass
from resources.models import Cluster, Quota
from tests.browser.conftest import log_in_as

pytestmark = pytest.mark.browser

WORDS = {
    "en": {"edit": "Edit", "guaranteed": "Guaranteed boards", "save": "Save",
           "refused": "its projects' guarantees would add up to 18",
           "saved": "Saved the quota of Vision", "quota_of": "Quota of Vision",
           "not_mirrored": "queues not mirrored: cannot reach"},
    "zh": {"edit": "编辑", "guaranteed": "保证板卡数", "save": "保存",
           "refused": "其下项目的保证额度合计将达 18", "saved": "已保存 Vision 的配额",
           "quota_of": "Vision 的配额", "not_mirrored": "队列未同步：cannot reach"},
}  # fmt: skip


@pytest.mark.parametrize("language", ["en", "zh"])
def test_an_admin_sets_a_quota_and_the_lead_reads_it(page, demo, language):
    words = WORDS[language]
    # Two clusters as the queue mirror left them (resources.queue_mirror): one mirrored,
    # one that could not be.
    Cluster.objects.create(
        name="gpu-east",
        mirrored_queues=["console-dept-research", "console-speech", "console-vision"],
        queues_mirrored_at=now(),
    )
    Cluster.objects.create(name="gpu-west", queues_problem="cannot reach gpu-west: timed out")
    p = log_in_as(page, "admin", language)
    page.goto("/settings/quotas/")
    mirrored = p.locator("[data-testid=volcano-queues]")
    expect(mirrored).to_contain_text("console-vision")
    expect(mirrored).to_contain_text(words["not_mirrored"])
    rows = p.locator("[data-testid=quota-table] [data-testid=quota-row]")
    # The demo's department, Research, then its projects Speech and Vision.
    expect(rows).to_have_count(3)
    expect(rows.first).to_contain_text("Research")
    vision = rows.filter(has_text="Vision")
    vision.get_by_role("link", name=words["edit"]).click()

    p.get_by_label(words["guaranteed"]).fill("12")
    p.get_by_role("button", name=words["save"]).click()
    expect(p.locator("[data-testid=quota-form]")).to_contain_text(words["refused"])
    expect(p.get_by_label(words["guaranteed"])).to_have_value("12")  # nothing typed is lost
    page.shot(f"quota-refused-{language}")
    page.errors.clear()  # Chromium logs the 422 reply as a failed resource

    p.get_by_label(words["guaranteed"]).fill("8")
    p.get_by_role("button", name=words["save"]).click()
    expect(p.get_by_role("alert").filter(has_text=words["saved"])).to_be_visible()
    history = p.locator("[data-testid=quota-history] tbody tr").first
    expect(history).to_contain_text("Vision")
    expect(history).to_contain_text("admin")
    expect(history).to_contain_text("8")
    page.shot(f"quota-settings-{language}")

    p.context.clear_cookies()
    p = log_in_as(page, "lead", language)
    page.goto("/queue/")
    card = p.locator("[data-testid=queue-quotas]")
    expect(card).to_contain_text(words["quota_of"])
    expect(card.locator("[data-testid=quota-row]")).to_have_count(2)
    expect(card.locator("[data-testid=quota-row]").last).to_contain_text("8")
    expect(card.locator("svg.quota-bar")).to_have_count(2)
    page.shot(f"queue-quotas-{language}")


HELD = {"en": "held for the quota: a job of Vision ahead of this one waits for room",
        "zh": "因配额暂缓：Vision 排在本任务之前的一个任务正在等待"}  # fmt: skip


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_form_says_before_create_that_the_team_is_at_its_maximum(page, demo, language):
    # An admin caps Vision at 16 boards: the demo's sweep-large (4 nodes x 4 boards) waits
    # held, as Vision's running jobs and it would hold more; a new job of Vision's comes
    # after it.
    Quota.objects.filter(project__slug="vision").update(maximum=16)
    p = log_in_as(page, "alice", language)
    page.goto("/jobs/new/")
    p.locator("[data-testid=spec-choices] .form-check", has_text="gpu-1").locator("input").check()
    panel = p.locator("[data-testid=prediction]")
    expect(panel.locator("[data-state=queue]")).to_contain_text(HELD[language])
    page.shot(f"form-held-for-quota-{language}")
    run_pass()  # as the worker does: the queue page shows what the last pass found
    page.goto("/queue/")
    row = p.locator("tbody tr", has_text="sweep-large")
    expect(row.locator("[data-testid=held-for-quota]")).to_be_visible()
    page.shot(f"queue-held-for-quota-{language}")
