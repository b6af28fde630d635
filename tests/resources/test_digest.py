"""The weekly usage mail to project leads (SPEC G4): what it says, to whom, once a week."""

from datetime import UTC, datetime, timedelta

import pytest
from celery.schedules import crontab
from django.conf import settings
from django.core import mail

from console.models import Role
from resources import digest
from resources.models import UsageDigest
from tests.factories import MembershipFactory, UserFactory
from tests.resources.factories import NodeFactory, held

MONDAY = datetime(2026, 11, 23, 6, 0, tzinfo=UTC)  # the run; the week before began Nov 16


@pytest.fixture
def week_of_use(alice, bob, lead, vision, speech):
    lead.email = "lead@example.com"
    lead.save()
    node = NodeFactory()
    last_week = MONDAY - timedelta(days=5)
    held(node, last_week, 4, "2", owner=alice, project=vision, cpu_millicores=4000,
         memory_mib=8192)  # fmt: skip
    held(node, last_week, 2, "1", owner=bob, project=vision)
    # From the Sunday evening before the week, for 18 hours: 14 of them in the week.
    held(node, MONDAY - timedelta(days=7, hours=10), 18, "8", owner=bob, project=vision)
    held(node, last_week, 3, "4", owner=bob, project=speech)  # not a project lead leads


@pytest.mark.django_db
@pytest.mark.usefixtures("week_of_use")
def test_a_lead_gets_last_weeks_use_of_their_projects_once(lead):
    MembershipFactory(project=lead.memberships.get().project, role=Role.LEAD,
                      user=UserFactory(username="quiet-lead", email=""))  # fmt: skip

    assert digest.send_all(now=MONDAY) == 1
    assert digest.send_all(now=MONDAY + timedelta(hours=1)) == 0

    [sent] = mail.outbox
    assert sent.to == ["lead@example.com"]
    assert sent.subject == "Usage of your projects, week of 2026-11-16"
    body = sent.body
    assert "from 2026-11-16 to 2026-11-23 (UTC)" in body
    # alice 2 boards, 4 cores, 8 GiB for 4 h; bob 1 board, 1 core, 1 GiB for 2 h (the
    # factory's), then 8 boards (and a core, a GiB) for the 14 h of the week.
    assert "Project Vision: 122.0 board-hours, 32.0 CPU core-hours, 48.0 memory GiB-hours" in body
    assert (
        "  bob: 114.0 board-hours, 16.0 CPU core-hours, 16.0 memory GiB-hours\n  alice: 8.0 "
        in body
    )
    assert "  alice: 8.0 board-hours, 16.0 CPU core-hours, 32.0 memory GiB-hours" in body
    assert "Speech" not in body
    assert "/usage/?days=7&unit=day&by=owner" in body
    assert UsageDigest.objects.get().week.isoformat() == "2026-11-16"


@pytest.mark.django_db
@pytest.mark.usefixtures("week_of_use")
def test_a_mail_server_that_refuses_loses_nothing(monkeypatch):
    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("the mail server is down")

    monkeypatch.setattr(digest, "send_mail", refuse)
    assert digest.send_all(now=MONDAY) == 0
    assert not UsageDigest.objects.exists()  # so the next run tries again
    monkeypatch.undo()
    assert digest.send_all(now=MONDAY) == 1


@pytest.mark.django_db
@pytest.mark.usefixtures("week_of_use")
def test_in_the_sites_language(settings):
    settings.LANGUAGE_CODE = "zh-hans"
    digest.send_all(now=MONDAY)
    assert mail.outbox[0].subject == "您的项目用量，2026-11-16 这一周"
    assert "项目 Vision：122.0 卡时" in mail.outbox[0].body


def test_beat_sends_it_on_monday_mornings():
    entry = settings.CELERY_BEAT_SCHEDULE["usage-digests"]
    assert entry["task"] == "resources.tasks.mail_usage_digests"
    assert entry["schedule"] == crontab(minute=0, hour=6, day_of_week="mon")
