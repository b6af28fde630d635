"""The end of the hours an abnormally ended job is kept for debugging (SPEC J20, seed 000).

Beat's ``end_debugging`` asks every minute: for each job with the terminal on that ended as
*error* more than ``debug_retention_hours`` ago, its backend frees what was kept for the
terminal (``discard_kept``: the containers' workspace, home and tmp; logs and outputs stay),
and an event says so, once (the backend answers True only the first time).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.utils import timezone

from console import limits
from console.words import counted, said
from jobs import lifecycle
from jobs.backend import attempt_backend
from jobs.models import Job, Phase
from jobs.terminal import access
from resources.backends.base import BackendError

log = logging.getLogger(__name__)

# Jobs that ended this long before their hours ran out were handled then: not asked again.
LOOK_BACK = timedelta(days=7)


def discard_expired(now=None) -> list[int]:
    """Free what was kept of every job whose debugging hours are over; the jobs freed."""
    now = now or timezone.now()
    hours = limits.current().debug_retention_hours
    over = now - timedelta(hours=hours)
    candidates = Job.objects.filter(
        debug_terminal=True,
        phase=Phase.ERROR,
        attempts__ended_at__lt=over,
        attempts__ended_at__gte=over - LOOK_BACK,
    ).distinct()
    freed = []
    for job in candidates:
        attempt = access.latest_attempt(job)
        until = access.kept_until(job, attempt)
        if until is None or until > now:
            continue
        try:
            if not attempt_backend(attempt).discard_kept(attempt.workload_id):
                continue
        except BackendError as error:  # its cluster does not answer: next minute
            log.warning("could not free job %s's kept containers: %s", job.pk, error)
            continue
        message = counted(
            "Kept %(n)s hour for debugging, now over: the job's containers (workspace, home, "
            "tmp) were cleaned; its logs and outputs stay.",
            "Kept %(n)s hours for debugging, now over: the job's containers (workspace, home, "
            "tmp) were cleaned; its logs and outputs stay.",
            "n",
        )
        lifecycle.record(job, said(message, n=hours))
        freed.append(job.pk)
    return freed
