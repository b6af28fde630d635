"""Notifications (SPEC I4) against the real database, a real HTTP receiver on loopback and
Django's mail outbox: each event is told once per channel and place the owner chose (or the
job says), a webhook's signature holds, a 500 is tried again, a dead endpoint ends as failed
in the log without raising; the page keeps the settings. The delivery task runs in this
process (Celery's apply: its retries too, without their wait)."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core import mail

from console import limits
from jobs import lifecycle
from jobs.models import Delivery, JobEvent, Notice, NotificationPrefs, Phase, Webhook
from jobs.notify.scan import scan
from jobs.tasks import deliver
from tests.helpers import free_port
from tests.jobs.factories import JobFactory

PATH_TO = {
    Phase.ADMITTED: [], Phase.STARTING: [], Phase.RUNNING: [Notice.STARTED],
    Phase.SUCCEEDED: [Notice.SUCCEEDED], Phase.ERROR: [Notice.FAILED],
    Phase.STOPPED: [Notice.STOPPED], Phase.EXPIRED: [Notice.STOPPED],
    Phase.RESTARTING: [Notice.FAULT], Phase.RESUMING: [Notice.FAULT], Phase.QUEUED: [],
}  # fmt: skip


@pytest.mark.parametrize("to", list(PATH_TO))
def test_a_move_tells_what_its_phase_says(to):
    assert [n for n in [lifecycle.notice_of(True, to, "info", "")] if n] == PATH_TO[to]


@pytest.mark.parametrize(
    ("item", "kind", "notice"),
    [("reclaim", "warning", Notice.PREEMPTED), ("reclaim", "info", ""),  # the claimant's
     ("idle", "warning", Notice.IDLE), ("dns", "warning", ""), ("", "info", "")],
)  # fmt: skip
def test_other_events_tell_a_reclaim_and_an_idle_warning(item, kind, notice):
    assert lifecycle.notice_of(False, Phase.RUNNING, kind, item) == notice


@pytest.fixture(autouse=True)
def receivers_inside(admin):
    """The receivers here are on loopback: the admin allows webhooks there."""
    limits.save({"webhooks_inside": True}, admin)


class Receiver:
    """A webhook receiver on loopback: answers each path's queued statuses (then 200) and
    keeps what it got."""

    def __init__(self):
        self.got: list[tuple[str, dict, bytes]] = []
        self.answers: dict[str, list[int]] = {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.got.append((self.path, dict(self.headers), body))
                queued = receiver.answers.get(self.path, [])
                self.send_response(queued.pop(0) if queued else 200)
                self.end_headers()

            def log_message(self, *_args):
                pass

        self.port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
def receiver():
    found = Receiver()
    yield found
    found.server.shutdown()


def run(job, *phases):
    for to in phases:
        assert lifecycle.move(job, to, f"now {to}")


def send_all() -> list[int]:
    ids = scan()
    for pk in ids:
        deliver.apply(args=[pk])
    return ids


def test_each_event_is_told_once_where_its_owner_chose(alice, vision, receiver):
    alice.email = "alice@example.com"
    alice.save()
    NotificationPrefs.objects.create(user=alice, email=[Notice.FAILED], webhook=list(Notice.values),
                                     chat=[])  # fmt: skip
    hook = Webhook.objects.create(user=alice, url=receiver.url("/hook"))
    receiver.answers["/hook"] = [500]  # the first try fails: it is tried again
    good = JobFactory(owner=alice, project=vision, name="good")
    bad = JobFactory(owner=alice, project=vision, name="bad")
    run(good, Phase.ADMITTED, Phase.STARTING, Phase.RUNNING, Phase.SUCCEEDED)
    run(bad, Phase.ADMITTED, Phase.STARTING, Phase.ERROR)

    ids = send_all()
    assert len(ids) == 4  # good: started, succeeded; bad: failed, by webhook and by email
    assert scan() == []  # nothing twice
    told = [(json.loads(body)["job"]["name"], json.loads(body)["notice"])
            for _path, _headers, body in receiver.got]  # fmt: skip
    assert told[0] == told[1] == ("good", "started")  # the 500, then the retry
    assert sorted(set(told)) == [("bad", "failed"), ("good", "started"), ("good", "succeeded")]
    assert len(told) == 4
    for _path, headers, body in receiver.got:
        stamp = headers["X-Console-Timestamp"]
        mac = hmac.new(hook.secret.encode(), f"{stamp}.".encode() + body, hashlib.sha256)
        assert headers["X-Console-Signature"] == f"v1={mac.hexdigest()}"
        assert abs(int(stamp) - time.time()) < 60
    assert [m.subject for m in mail.outbox] == ["Job bad: Failed (error)"]
    assert "now error" in mail.outbox[0].body and f"/jobs/{bad.pk}/" in mail.outbox[0].body
    log = {(d.notice, d.channel): (d.state, d.attempts) for d in Delivery.objects.all()}
    assert log[("started", "webhook")] == ("sent", 2)
    assert log[("failed", "email")] == ("sent", 1)


def test_a_job_says_what_its_owner_is_told_of_it(alice, vision):
    alice.email = "alice@example.com"
    alice.save()
    job = JobFactory(owner=alice, project=vision, notify_on=[Notice.SUCCEEDED])
    run(job, Phase.ADMITTED, Phase.STARTING, Phase.RUNNING, Phase.SUCCEEDED)
    send_all()
    assert [m.subject for m in mail.outbox] == [f"Job {job.name}: Succeeded"]


def test_a_dead_endpoint_ends_failed_in_the_log_and_slows_nothing_else(alice, vision):
    Webhook.objects.create(user=alice, url=f"http://127.0.0.1:{free_port()}/nobody")
    job = JobFactory(owner=alice, project=vision)
    run(job, Phase.ADMITTED, Phase.STARTING, Phase.RUNNING)
    began = time.monotonic()
    (pk,) = send_all()
    delivery = Delivery.objects.get(pk=pk)
    assert delivery.state == Delivery.State.FAILED and delivery.attempts == 6
    assert "ConnectError" in delivery.answer
    assert time.monotonic() - began < 30
    job.refresh_from_db()
    assert job.phase == Phase.RUNNING  # the job never waited on it


def test_the_page_keeps_the_settings_and_refuses_bad_places(client, alice):
    client.force_login(alice)
    page = client.get("/account/notifications/")
    assert page.status_code == 200
    assert 'data-testid="pref-email-failed"' in page.content.decode()
    saved = client.post("/account/notifications/", {"action": "prefs", "email": ["idle"],
                                                    "chat": ["succeeded", "failed"]})  # fmt: skip
    assert saved.status_code == 302
    prefs = NotificationPrefs.objects.get(user=alice)
    assert (prefs.email, prefs.webhook, prefs.chat) == (["idle"], [], ["succeeded", "failed"])
    bad = client.post(
        "/account/notifications/", {"action": "webhook", "url": "ftp://example.com/y"}
    )
    assert bad.status_code == 422 and "http:// or https://" in bad.content.decode()
    assert 'value="ftp://example.com/y"' in bad.content.decode()  # what was typed is kept
    chat = client.post("/account/notifications/", {"action": "chat", "url": "nonsense://a"})
    assert chat.status_code == 422 and "Apprise knows no service" in chat.content.decode()
    added = client.post("/account/notifications/", {"action": "chat",
                                                    "url": "json://127.0.0.1:9/x"})  # fmt: skip
    assert added.status_code == 302 and alice.chat_targets.count() == 1
    assert JobEvent.objects.count() == 0


def test_webhooks_into_the_console_s_network_need_the_admin_s_leave(client, alice, vision, admin,
                                                                     receiver):  # fmt: skip
    """Off (the default), a webhook to loopback or a private address is refused when added,
    and one already there is not called: its delivery fails, saying why."""
    limits.save({"webhooks_inside": False}, admin)
    client.force_login(alice)
    for url in (receiver.url("/in"), "http://10.1.2.3/x", "http://localhost:9/x"):
        answer = client.post("/account/notifications/", {"action": "webhook", "url": url})
        assert answer.status_code == 422, url
        assert "inside the console&#x27;s network" in answer.content.decode()
    assert not Webhook.objects.exists()
    Webhook.objects.create(user=alice, url=receiver.url("/in"))  # added while it was allowed
    job = JobFactory(owner=alice, project=vision)
    run(job, Phase.ADMITTED, Phase.STARTING, Phase.RUNNING)
    (pk,) = send_all()
    delivery = Delivery.objects.get(pk=pk)
    assert delivery.state == Delivery.State.FAILED and "inside the console" in delivery.answer
    assert receiver.got == []
