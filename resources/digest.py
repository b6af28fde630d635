"""The weekly usage mail to each project lead (SPEC G4): last week's board-, CPU core- and
memory GiB-hours of each project they lead, member by member, with a link to /usage/.

Sent once a week (beat: Monday morning) for the week that just ended, Monday to Monday in
UTC (the buckets of /usage/). Each lead gets it once per week however often the task runs:
the mail goes out for whoever inserts the lead's :class:`UsageDigest` row first. Written in
the site's language, as the other mails (jobs/faults/alerts.py).
"""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, time, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from console.models import Membership
from console.models.projects import LEAD_ROLES
from resources.models import UsageDigest
from resources.usage import MEASURES, usage_in

log = logging.getLogger(__name__)

SHOWN = 10  # members listed per project; the rest are summed on one line


def last_week(now: datetime) -> date:
    """The Monday that began the last whole week before ``now`` (UTC)."""
    today = now.astimezone(UTC).date()
    return today - timedelta(days=today.weekday() + 7)


def message(lead, projects, week: date, now: datetime) -> tuple[str, str]:
    """(subject, body) for one lead, in the active language."""
    start = datetime.combine(week, time(), tzinfo=UTC)
    end = start + timedelta(days=7)
    subject = _("Usage of your projects, week of %(week)s") % {"week": week.isoformat()}
    lines = [
        _("Board-, CPU core- and memory GiB-hours held from %(start)s to %(end)s (UTC).")
        % {"start": week.isoformat(), "end": (week + timedelta(days=7)).isoformat()},
    ]
    for project in projects:
        rows = usage_in(start, end, by="owner", now=min(now, end), projects=[project.pk])
        shown = {row.key for row in rows[:SHOWN]}
        users = dict(get_user_model().objects.filter(pk__in=shown).values_list("pk", "username"))
        total = [sum(getattr(row, m) for row in rows) for m in MEASURES]
        lines += ["", _("Project %(project)s: %(boards)s board-hours, %(cpu)s CPU core-hours, "
                        "%(memory)s memory GiB-hours") % _amounts(project.name, total)]  # fmt: skip
        if not rows:
            lines.append("  " + _("Nothing was held."))
        for row in rows[:SHOWN]:
            amounts = _amounts("", [getattr(row, m) for m in MEASURES])
            amounts["name"] = users.get(row.key, _("Not recorded"))
            lines.append("  " + _("%(name)s: %(boards)s board-hours, %(cpu)s CPU core-hours, "
                                  "%(memory)s memory GiB-hours") % amounts)  # fmt: skip
        if len(rows) > SHOWN:
            more = len(rows) - SHOWN
            lines.append("  " + ngettext("and %(n)s more member", "and %(n)s more members",
                                         more) % {"n": more})  # fmt: skip
    page = f"{settings.SITE_URL.rstrip('/')}{reverse('usage')}?days=7&unit=day&by=owner"
    lines += ["", _("Usage page: %(url)s") % {"url": page}]
    return subject, "\n".join(lines) + "\n"


def _amounts(project: str, sums) -> dict:
    boards, cpu, memory = (f"{value:.1f}" for value in sums)
    return {"project": project, "boards": boards, "cpu": cpu, "memory": memory}


def send_all(now: datetime | None = None) -> int:
    """Mail last week's digest to every lead with an email address who has not had it yet.
    Returns how many mails were handed to the mail server."""
    now = now or timezone.now()
    week = last_week(now)
    led: dict = {}
    memberships = Membership.objects.filter(role__in=LEAD_ROLES).select_related("user", "project")
    for membership in memberships.order_by("project__name"):
        led.setdefault(membership.user, []).append(membership.project)
    sent = 0
    for lead, projects in led.items():
        if not (lead.email or "").strip():
            log.info("usage digest not mailed: %s has no email address", lead)
            continue
        try:
            with transaction.atomic():
                UsageDigest.objects.create(lead=lead, week=week)
                with translation.override(settings.LANGUAGE_CODE):
                    subject, body = message(lead, projects, week, now)
                send_mail(subject, body, None, [lead.email.strip()])
        except IntegrityError:  # this week's went out already
            continue
        except Exception:  # the mail server refused: no row kept, the next run tries again
            log.exception("usage digest for %s not mailed", lead)
            continue
        sent += 1
    return sent
