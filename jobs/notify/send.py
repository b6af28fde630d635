"""Sending one delivery (jobs/notify): an email, a signed webhook POST, or a chat message
through Apprise. Each raises ``Undelivered`` for the task to try again later.

A webhook's body is JSON; its headers carry the delivery's id, the event, a Unix timestamp
and ``X-Console-Signature: v1=<hex>``, the HMAC-SHA256 with the webhook's secret of
``<timestamp>.<body>``: a receiver checks it and refuses an old timestamp, so that neither a
forged nor a replayed delivery is taken.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import httpx
from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from jobs.faults.alerts import job_url
from jobs.models import Channel, Delivery, Notice, Webhook
from jobs.notify import addresses

TIMEOUT = 10.0  # seconds a webhook or chat service may take to answer


class Undelivered(Exception):
    """Not delivered this time; the message is what the user's log shows."""


def signature(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"v1={mac.hexdigest()}"


def payload(delivery: Delivery) -> dict:
    job, event = delivery.job, delivery.event
    return {
        "delivery": delivery.pk,
        "notice": delivery.notice,
        "at": (event.at if event else delivery.created_at).isoformat(),
        "message": event.message if event else "",
        "job": None if job is None else {
            "id": job.pk, "name": job.name, "project": job.project.slug,
            "owner": job.owner.get_username(), "status": job.status, "phase": job.phase,
            "url": job_url(job),
        },
    }  # fmt: skip


def words(delivery: Delivery) -> tuple[str, str]:
    """(title, text) in the site's language (a worker has no reader)."""
    with translation.override(settings.LANGUAGE_CODE):
        job = delivery.job
        name = job.name if job else "?"
        title = _("Job %(name)s: %(notice)s") % {
            "name": name, "notice": Notice(delivery.notice).label,
        }  # fmt: skip
        said = delivery.event.text if delivery.event else ""
        text = f"{said}\n\n" + (_("Job page: %(url)s") % {"url": job_url(job)} if job else "")
    return title, text.strip() + "\n"


def _email(delivery: Delivery) -> str:
    title, text = words(delivery)
    try:
        send_mail(title, text, None, [delivery.target])
    except Exception as exc:  # the mail server down or refusing
        raise Undelivered(f"{type(exc).__name__}: {exc}"[:300]) from exc
    return "sent"


def _webhook(delivery: Delivery) -> str:
    hook = Webhook.objects.filter(user_id=delivery.user_id, url=delivery.target).first()
    if hook is None:
        raise Undelivered(_("The webhook was removed."))
    address = addresses.refused(delivery.target)
    if address:
        raise Undelivered(_("Not sent: the address is inside the console's network (%(address)s).")
                          % {"address": address})  # fmt: skip
    body = json.dumps(payload(delivery), ensure_ascii=False).encode()
    stamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "training-console",
        "X-Console-Delivery": str(delivery.pk),
        "X-Console-Notice": delivery.notice,
        "X-Console-Timestamp": str(stamp),
        "X-Console-Signature": signature(hook.secret, stamp, body),
    }
    try:
        answer = httpx.post(delivery.target, content=body, headers=headers, timeout=TIMEOUT,
                            follow_redirects=False)  # fmt: skip
    except httpx.HTTPError as exc:
        raise Undelivered(f"{type(exc).__name__}: {exc}"[:300]) from exc
    if not 200 <= answer.status_code < 300:
        raise Undelivered(f"HTTP {answer.status_code}")
    return f"HTTP {answer.status_code}"


def _chat(delivery: Delivery) -> str:
    import apprise

    title, text = words(delivery)
    service = apprise.Apprise()
    if not service.add(delivery.target):
        raise Undelivered(_("Apprise does not know this URL."))
    if not service.notify(title=title, body=text):
        raise Undelivered(_("The chat service did not take the message."))
    return "sent"


SENDERS = {Channel.EMAIL: _email, Channel.WEBHOOK: _webhook, Channel.CHAT: _chat}


def send(delivery: Delivery, last: bool) -> bool:
    """Try ``delivery`` once and record the outcome; True when it went. ``last``: no retry
    follows, so a failure is final."""
    Delivery.objects.filter(pk=delivery.pk).update(attempts=delivery.attempts + 1)
    try:
        answer = SENDERS[delivery.channel](delivery)
    except Undelivered as exc:
        state = Delivery.State.FAILED if last else Delivery.State.PENDING
        Delivery.objects.filter(pk=delivery.pk).update(state=state, answer=str(exc)[:300])
        if last:
            return False
        raise
    Delivery.objects.filter(pk=delivery.pk).update(
        state=Delivery.State.SENT, answer=answer[:300], sent_at=timezone.now()
    )
    return True
