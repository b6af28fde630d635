"""/usage/ in the browser, in English and Chinese: a lead reads the team's board-hours per
day and per member, switches to weeks, and downloads the CSV of what the page shows."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from tests.browser.conftest import log_in_as

pytestmark = pytest.mark.browser

WORDS = {
    "en": {"by": "By", "per": "Per", "member": "member", "week": "week", "show": "Show",
           "csv": "Download CSV", "total": "board-hours in all"},
    "zh": {"by": "分组", "per": "统计粒度", "member": "成员", "week": "周", "show": "查看",
           "csv": "下载 CSV", "total": "卡时"},
}  # fmt: skip


def two_weeks_of_use():
    """alice and bob in vision, a run a day for the last 12 days (alice 2 boards for 4 hours,
    bob 1 board for 2 hours), on a demo node."""
    from django.contrib.auth.models import User

    from console.models import Project
    from resources.models import Allocation, Node

    vision = Project.objects.get(slug="vision")
    node = Node.objects.filter(board_count__gt=0).first()
    now = timezone.now()
    # The demo's running job has held its four boards for twenty seconds (0.022 board-hours
    # today): seeded a moment ago, its hours would round to nothing and today have no bar.
    Allocation.objects.live().update(created_at=now - timedelta(seconds=20))
    today = now.replace(hour=8, minute=0, second=0, microsecond=0)
    for days in range(1, 13):
        began = today - timedelta(days=days)
        for name, boards, hours in (("alice", 2, 4), ("bob", 1, 2)):
            owner = User.objects.get(username=name)
            row = Allocation.objects.create(
                node=node, holder_id=10_000 + days, label=f"run-{days}", cpu_millicores=1000,
                memory_mib=1024, slots=list(range(boards)), owner=owner, project=vision,
                released_at=began + timedelta(hours=hours), boards=Decimal(boards),
            )  # fmt: skip
            Allocation.objects.filter(pk=row.pk).update(created_at=began)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_lead_reads_the_teams_board_hours(page, demo, language):
    two_weeks_of_use()
    words = WORDS[language]
    p = log_in_as(page, "lead", language)
    page.goto("/usage/?days=30&unit=day&by=owner")
    table = p.locator("[data-testid=usage-table] tbody tr")
    expect(table.first).to_contain_text("alice")
    expect(table.first).to_contain_text("96.0")  # 12 days x 2 boards x 4 hours
    expect(table.nth(1)).to_contain_text("bob")
    expect(table.nth(1)).to_contain_text("24.0")
    # A bar a day of the twelve, and today's: the demo's running job holds boards now.
    expect(p.locator("[data-testid=usage-chart] rect")).to_have_count(13)
    expect(p.locator("#usage-chart-heading")).to_contain_text("120.0")
    expect(p.locator("#usage-chart-heading")).to_contain_text(words["total"])
    page.shot(f"usage-by-member-{language}")

    p.get_by_label(words["per"], exact=True).select_option("week")
    p.get_by_role("button", name=words["show"]).click()
    expect(p).to_have_url(re.compile(r"unit=week"))
    bars = p.locator("[data-testid=usage-chart] rect")
    assert 2 <= bars.count() <= 3  # the last thirteen days are in two or three weeks
    expect(table.first).to_contain_text("96.0")

    with p.expect_download() as download:
        p.get_by_role("link", name=words["csv"]).click()
    assert download.value.suggested_filename == "usage-30d-by-owner-per-week.csv"
    lines = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
    assert lines[0] == "week,member,board_hours,cpu_hours,memory_gib_hours"
    per_member: dict[str, Decimal] = {}
    for _week, name, hours, *_others in (line.split(",") for line in lines[1:]):
        per_member[name] = per_member.get(name, Decimal(0)) + Decimal(hours)
    # alice's also counts the minute or so the demo's running job of hers has held its boards.
    assert per_member["bob"] == 24 and 96 <= per_member["alice"] < Decimal("96.1")
    assert page.errors == []
