"""Emails to a job's owner when the performance, hang or idle watch finds something (SPEC
F6: "邮件通知用户"; G5). Written in the site's language: a worker has no reader's language, and the
same words are on the job page in the reader's own.

Sent once the watch's transaction has committed, so that an alert whose state change lost a
race (or rolled back) is never mailed. Django's mail settings decide how (README: EMAIL_*).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext as _

from console.words import Said, wording
from jobs.models import Job

log = logging.getLogger(__name__)


def reachable(user) -> bool:
    return bool(user.email and user.email.strip())


def later(job: Job, kind: str, found: Said, action: Said, isolated: list[str]) -> None:
    """Mail the owner once the current transaction commits."""
    transaction.on_commit(lambda: send(job, kind, found, action, isolated))


def job_url(job: Job) -> str:
    """The job page's address: absolute when SITE_URL says where the console is served."""
    return f"{settings.SITE_URL.rstrip('/')}{job.get_absolute_url()}"


def message(job: Job, kind: str, found: Said, action: Said, isolated=()) -> tuple[str, str]:
    """(subject, body) in the active language."""
    if kind == "performance":
        subject = _("Job %(name)s: performance below expectations") % {"name": job.name}
    elif kind == "idle":
        subject = _("Job %(name)s: idle") % {"name": job.name}
    else:
        subject = _("Job %(name)s: no progress") % {"name": job.name}
    lines = [
        _("Training job %(name)s (project %(project)s).")
        % {"name": job.name, "project": job.project.name},
        "",
        _("What was seen: %(found)s") % {"found": wording(found, found.as_json())},
        _("What the console does: %(action)s")
        % {"action": wording(action, action.as_json()).strip()},
    ]
    if isolated:
        lines.append(
            _("Its nodes (%(nodes)s) are set aside until an admin checks them.")
            % {"nodes": ", ".join(isolated)}
        )
    lines += ["", _("Job page: %(url)s") % {"url": job_url(job)}]
    return subject, "\n".join(lines) + "\n"


def send(job: Job, kind: str, found: Said, action: Said, isolated=()) -> bool:
    """True when the mail was handed to the mail server. A failure is logged, never raised:
    the watch has done its part (the event is on the job page)."""
    owner = job.owner
    if not reachable(owner):
        log.info("job %s: %s alert not mailed, %s has no email address", job.pk, kind, owner)
        return False
    with translation.override(settings.LANGUAGE_CODE):
        subject, body = message(job, kind, found, action, isolated)
    try:
        send_mail(subject, body, None, [owner.email.strip()])
    except Exception:  # SMTP down or refusing: the alert stays on the page
        log.exception("job %s: mailing the %s alert to %s failed", job.pk, kind, owner)
        return False
    log.info("job %s: %s alert mailed to %s", job.pk, kind, owner)
    return True
