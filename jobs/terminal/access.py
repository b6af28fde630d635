"""Who may open a debug terminal into which node of a job, and until when (SPEC J20, P).

One answer for the page, the job page's links and the WebSocket (which asks again while it
is open): the user may change the job (read-only sharing gives no terminal), the job has
the terminal on, the node is one of its latest attempt's, and that attempt runs now, or the
job ended as *error* less than ``debug_retention_hours`` ago (its containers are kept for
debugging until then).

A job requeued after a fault (restarting, resuming) has not ended: its failed attempt is
over and the next one starts in new containers, so there is no terminal until it runs
again, and the hours kept count from the job's own end.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from console import limits
from jobs.models import Attempt, Job, Phase
from jobs.permissions import can_change

# Close codes of the WebSocket (4000-4999 are the application's), and what the page says.
LOGIN, FORBIDDEN, NOT_FOUND, OFF, ENDED, UNAVAILABLE = 4401, 4403, 4404, 4409, 4410, 4400
WORDS = {
    LOGIN: _("You are not logged in (any more). Log in again and reopen the terminal."),
    FORBIDDEN: _("Only people who may change this job get a terminal into it."),
    NOT_FOUND: _("This job has no such node, or you may not see it."),
    OFF: _("The debug terminal is off for this job."),
    ENDED: _("The job's containers are gone: it is not running, and it is no longer kept."),
    UNAVAILABLE: _("No terminal could be opened into this node."),
}


@dataclass(frozen=True)
class Grant:
    job: Job
    attempt: Attempt
    replica: str
    label: str
    kept_until: datetime | None  # None: the job runs now


@dataclass(frozen=True)
class Refusal:
    code: int

    @property
    def words(self) -> str:
        return str(WORDS[self.code])


def kept_until(job: Job, attempt: Attempt | None) -> datetime | None:
    """Until when an abnormally ended job's containers are kept for debugging (None: not
    kept, or the job did not end that way)."""
    if not job.debug_terminal or job.phase != Phase.ERROR or attempt is None:
        return None
    if attempt.ended_at is None or attempt.submitted_at is None:
        return None  # it never ran: there is nothing to enter
    if attempt.cluster_id is not None:
        return None  # a Kubernetes pod that ended keeps no container to enter
    return attempt.ended_at + timedelta(hours=limits.current().debug_retention_hours)


def open_now(job: Job, attempt: Attempt | None, now: datetime | None = None) -> bool:
    """Whether the job's latest attempt can be entered now (permissions aside)."""
    if attempt is None or not job.debug_terminal:
        return False
    if job.phase == Phase.RUNNING and attempt.ended_at is None:
        return True
    until = kept_until(job, attempt)
    return until is not None and (now or timezone.now()) < until


def latest_attempt(job: Job) -> Attempt | None:
    return job.attempts.order_by("-number").first()


def replicas_of(attempt: Attempt | None) -> list[tuple[str, str]]:
    """(name, label) of each node of the attempt, in the plan's order."""
    if attempt is None:
        return []
    found = []
    for replica in attempt.replicas or []:
        label = replica.get("label") or f"{replica.get('role', '')} {replica.get('index', '')}"
        found.append((replica["name"], label.strip()))
    return found


def check(user, job_id: int, replica: str) -> Grant | Refusal:
    """Whether ``user`` may open a terminal into ``replica`` of job ``job_id`` now."""
    if not user.is_authenticated:
        return Refusal(LOGIN)
    job = Job.objects.visible_to(user).select_related("owner").filter(pk=job_id).first()
    if job is None:
        return Refusal(NOT_FOUND)
    if not can_change(user, job):
        return Refusal(FORBIDDEN)
    if not job.debug_terminal:
        return Refusal(OFF)
    attempt = latest_attempt(job)
    labels = dict(replicas_of(attempt))
    if replica not in labels:
        return Refusal(NOT_FOUND)
    if not open_now(job, attempt):
        return Refusal(ENDED)
    until = None if attempt.ended_at is None else kept_until(job, attempt)
    return Grant(job, attempt, replica, labels[replica], until)
