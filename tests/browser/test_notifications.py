"""/account/notifications/ in the browser, English and Chinese (SPEC I4): alice chooses what
she is told, adds a webhook (its secret shown for her receiver), a chat service that Apprise
does not know is refused on its field with what she typed kept, and the log shows a delivery
to her webhook once a job of hers has started."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in_as
from tests.jobs.test_notify import Receiver, send_all

pytestmark = pytest.mark.browser

WORDS = {
    "en": {"save": "Save", "add_hook": "Add the webhook", "add_chat": "Add the chat service",
           "sent": "Sent", "unknown": "Apprise knows no service"},
    "zh": {"save": "保存", "add_hook": "添加 Webhook", "add_chat": "添加聊天服务",
           "sent": "已发送", "unknown": "Apprise 不认识"},
}  # fmt: skip


@pytest.mark.parametrize("language", ["en", "zh"])
def test_alice_chooses_what_she_is_told_and_sees_it_delivered(page, demo, language):
    from django.contrib.auth.models import User

    from console import limits
    from jobs import lifecycle
    from jobs.models import Job, NotificationPrefs, Phase

    words = WORDS[language]
    limits.save({"webhooks_inside": True}, User.objects.get(username="admin"))  # on loopback
    receiver = Receiver()
    try:
        p = log_in_as(page, "alice", language)
        page.goto("/account/notifications/")
        p.locator("[data-testid=pref-webhook-started]").check()
        p.locator("[data-testid=pref-email-idle]").uncheck()
        p.get_by_role("button", name=words["save"]).click()
        expect(p.locator("[data-testid=pref-webhook-started]")).to_be_checked()
        prefs = NotificationPrefs.objects.get(user__username="alice")
        assert "started" in prefs.webhook and "idle" not in prefs.email

        p.locator("[data-testid=webhooks] input[name=url]").fill(receiver.url("/alice"))
        p.get_by_role("button", name=words["add_hook"]).click()
        expect(p.locator("[data-testid=webhook-row]")).to_contain_text(receiver.url("/alice"))
        expect(p.locator("[data-testid=webhook-secret]")).not_to_be_empty()

        p.locator("[data-testid=chats] input[name=url]").fill("nonsense://a")
        p.get_by_role("button", name=words["add_chat"]).click()
        expect(p.locator("[data-testid=chats] input[name=url]")).to_have_value("nonsense://a")
        expect(p.locator("[data-testid=chats]")).to_contain_text(words["unknown"])
        page.errors.clear()  # Chromium logs the 422 reply as a failed resource

        alice = User.objects.get(username="alice")
        job = Job.objects.filter(owner=alice, phase=Phase.QUEUED).first()
        for to in (Phase.ADMITTED, Phase.STARTING, Phase.RUNNING):
            assert lifecycle.move(job, to, f"now {to}")
        send_all()
        assert [path for path, _h, _b in receiver.got] == ["/alice"]
        page.goto("/account/notifications/")
        row = p.locator("[data-testid=delivery-row]").first
        expect(row).to_contain_text(job.name)
        expect(row).to_contain_text(words["sent"])
        page.shot(f"notifications-{language}")
    finally:
        receiver.server.shutdown()
