"""Job events with a notice, made into deliveries (jobs/notify)."""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from console.celery import send
from jobs.faults.alerts import reachable
from jobs.models import (
    Channel,
    ChatTarget,
    Delivery,
    JobEvent,
    NoticeMark,
    NotificationPrefs,
    Webhook,
)

log = logging.getLogger(__name__)
BATCH = 500
LOOKBACK = 200  # event ids read again below the mark (see scan)
STRANDED = timedelta(minutes=5)


def owners_of(users: dict) -> dict[int, tuple[NotificationPrefs, dict[str, list[str]]]]:
    """For each of ``users`` (id -> user), their settings and where they can be told
    (email, webhooks, chat services): three queries for a batch, whatever its owners."""
    prefs = {p.user_id: p for p in NotificationPrefs.objects.filter(user_id__in=users)}
    hooks: dict[int, list[str]] = defaultdict(list)
    for user_id, url in Webhook.objects.filter(user_id__in=users).values_list("user_id", "url"):
        hooks[user_id].append(url)
    chats: dict[int, list[str]] = defaultdict(list)
    rows = ChatTarget.objects.filter(user_id__in=users).values_list("user_id", "url")
    for user_id, url in rows:
        chats[user_id].append(url)
    return {
        pk: (
            prefs.get(pk) or NotificationPrefs.defaults(user),
            {
                Channel.EMAIL: [user.email.strip()] if reachable(user) else [],
                Channel.WEBHOOK: hooks[pk],
                Channel.CHAT: chats[pk],
            },
        )
        for pk, user in users.items()
    }


def deliveries_of(event: JobEvent, prefs: NotificationPrefs, places: dict) -> list[Delivery]:
    """The deliveries ``event`` makes for its job's owner: on each channel that wants its
    notice (or, where the job says what its owner is told, each channel at all)."""
    job = event.job
    found = []
    for channel, where in places.items():
        wanted = job.notify_on if job.notify_on is not None else prefs.wanted(channel)
        if event.notice not in wanted:
            continue
        found += [
            Delivery(user_id=job.owner_id, job=job, event=event, notice=event.notice,
                     channel=channel, target=target)
            for target in where
        ]  # fmt: skip
    return found


def scan() -> list[int]:
    """Deliveries for the tagged events since the mark; their ids, sent once committed.

    Ids are taken in insert order but committed in any order: an event written by a slow
    transaction can appear below the mark after a scan went past it. So each scan reads
    again the last LOOKBACK ids below the mark too; what they made already is not made again
    (a delivery is unique per event, channel and place), and only what was never queued is
    sent. Two workers never scan at once: the mark's row is locked."""
    with transaction.atomic():
        mark, _ = NoticeMark.objects.select_for_update().get_or_create(pk=1)
        events = list(
            JobEvent.objects.filter(pk__gt=max(0, mark.last_event - LOOKBACK))
            .exclude(notice="")
            .select_related("job", "job__owner", "job__project")
            .order_by("pk")[:BATCH]
        )
        if not events:
            return []
        owners = owners_of({e.job.owner_id: e.job.owner for e in events})
        made: list[Delivery] = []
        for event in events:
            made += deliveries_of(event, *owners[event.job.owner_id])
        Delivery.objects.bulk_create(made, ignore_conflicts=True)
        mark.last_event = max(mark.last_event, events[-1].pk)
        mark.save(update_fields=["last_event"])
        fresh = Delivery.objects.filter(event__in=events, queued=False)
        ids = list(fresh.order_by("pk").values_list("pk", flat=True))
        fresh.update(queued=True)
        transaction.on_commit(lambda: _send_all(ids))
    return ids


def _send_all(ids: list[int]) -> None:
    for pk in ids:
        send("jobs.tasks.deliver", pk)


def stranded() -> list[int]:
    """Deliveries handed to the broker that no worker ever tried (the broker was away):
    handed again."""
    stale = Delivery.objects.filter(
        state=Delivery.State.PENDING, queued=True, attempts=0,
        created_at__lt=timezone.now() - STRANDED,
    )  # fmt: skip
    ids = list(stale.values_list("pk", flat=True)[:BATCH])
    _send_all(ids)
    return ids
