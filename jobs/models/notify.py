"""Notifications of what happens to a job (SPEC I4): what each user wants told, where, and
every delivery made, with its outcome (the user's delivery log)."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class Notice(models.TextChoices):
    """What a job's event tells its owner (JobEvent.notice; lifecycle decides)."""

    STARTED = "started", _("Started")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed (error)")
    FAULT = "fault", _("Fault: restarted or resumed")
    PREEMPTED = "preempted", _("Boards reclaimed")
    IDLE = "idle", _("Idle warning")
    STOPPED = "stopped", _("Stopped or expired")


class Channel(models.TextChoices):
    EMAIL = "email", _("Email")
    WEBHOOK = "webhook", _("Webhooks")
    CHAT = "chat", _("Chat services")


# What a user is told before choosing: what needs them, by email; everything to their
# webhooks (a script decides); the ends and the troubles in chat.
DEFAULTS = {
    Channel.EMAIL: [Notice.FAILED, Notice.FAULT, Notice.PREEMPTED, Notice.IDLE],
    Channel.WEBHOOK: [n.value for n in Notice],
    Channel.CHAT: [Notice.SUCCEEDED, Notice.FAILED, Notice.PREEMPTED],
}


def _notices():
    return ArrayField(models.CharField(max_length=12, choices=Notice.choices), default=list,
                      blank=True)  # fmt: skip


class NotificationPrefs(models.Model):
    """A user's defaults: for each channel, what it is told. A job may override what its
    owner is told of it (Job.notify_on), on the same channels."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="notification_prefs")  # fmt: skip
    email = _notices()
    webhook = _notices()
    chat = _notices()

    class Meta:
        verbose_name = _("notification settings")
        verbose_name_plural = _("notification settings")

    def __str__(self) -> str:
        return f"notifications of {self.user}"

    @classmethod
    def of(cls, user) -> NotificationPrefs:
        """The user's settings; the defaults (unsaved) when they never chose."""
        found = cls.objects.filter(user=user).first() if user.pk else None
        return found or cls.defaults(user)

    @classmethod
    def defaults(cls, user) -> NotificationPrefs:
        """What a user who never chose is told (unsaved)."""
        return cls(user=user, **{str(k): list(v) for k, v in DEFAULTS.items()})

    def wanted(self, channel: str) -> list[str]:
        return list(getattr(self, channel))


def new_secret() -> str:
    return secrets.token_urlsafe(32)


class Webhook(models.Model):
    """A URL told of a user's jobs by a signed POST (HMAC-SHA256 of the timestamp and the
    body with ``secret``, which the user's receiver checks)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="webhooks")  # fmt: skip
    url = models.URLField(_("URL"), max_length=500)
    secret = models.CharField(max_length=64, default=new_secret)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["user", "url"], name="one_webhook_per_url")]

    def __str__(self) -> str:
        return self.url


class ChatTarget(models.Model):
    """A chat service, as an Apprise URL (e.g. ``slack://…``, ``dingtalk://…``)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="chat_targets")  # fmt: skip
    url = models.CharField(_("Apprise URL"), max_length=500)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["user", "url"], name="one_chat_per_url")]

    def __str__(self) -> str:
        return self.url.split("://", 1)[0] + "://…"


class Delivery(models.Model):
    """One notice to one place: made once per (event, channel, target), sent by Celery with
    retries, its outcome kept for the user's log."""

    class State(models.TextChoices):
        PENDING = "pending", _("Sending")
        SENT = "sent", _("Sent")
        FAILED = "failed", _("Failed")

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="deliveries")  # fmt: skip
    job = models.ForeignKey("jobs.Job", on_delete=models.SET_NULL, null=True, blank=True,
                            related_name="+")  # fmt: skip
    event = models.ForeignKey("jobs.JobEvent", on_delete=models.SET_NULL, null=True,
                              blank=True, related_name="+")  # fmt: skip
    notice = models.CharField(max_length=12, choices=Notice.choices)
    channel = models.CharField(max_length=8, choices=Channel.choices)
    target = models.CharField(max_length=500)
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    queued = models.BooleanField(default=False)  # handed to Celery once (jobs/notify/scan)
    attempts = models.PositiveSmallIntegerField(default=0)
    answer = models.CharField(max_length=300, blank=True)  # the last status or error
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["event", "channel", "target"], name="one_delivery")
        ]

    def __str__(self) -> str:
        return f"{self.notice} to {self.channel} {self.target}: {self.state}"


class NoticeMark(models.Model):
    """How far the notices have been read from the job events (one row)."""

    last_event = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"notices read up to event {self.last_event}"
