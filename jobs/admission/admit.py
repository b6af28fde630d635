"""One admission pass with its chores, as the worker's admission task runs it.

``jobs.tasks.admit`` (beat, and after every change of the queue) and ``manage.py
schedule_once`` both call :func:`admission_pass`. It lives here, not in jobs.tasks, because
nothing may import the worker's entry points; the task alone then hands what was admitted to
the execution layer, so a command run from a shell never starts a job's processes itself.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from console import limits
from console.words import counted, said
from jobs import lifecycle
from jobs.admission.db import PassResult, prune_queue_changes, run_pass
from jobs.models import Job, JobEvent, Phase


def fail_overdue_resubmissions(now=None) -> list[int]:
    """Q6: a job resubmitted after a fault that waits longer than the admin's timeout ends
    as error, with an event saying so."""
    now = now or timezone.now()
    minutes = limits.current().resubmit_queue_timeout_minutes
    overdue = Job.objects.filter(
        phase=Phase.QUEUED, resubmitted_at__lt=now - timedelta(minutes=minutes)
    )
    ended = []
    for job in overdue:
        message = said(
            counted(
                "Resubmitted after a fault, it waited more than %(n)s minute in the queue: the "
                "cluster has no room for it. Ended as error.",
                "Resubmitted after a fault, it waited more than %(n)s minutes in the queue: the "
                "cluster has no room for it. Ended as error.",
                "n",
            ),
            n=minutes,
        )
        if lifecycle.move(job, Phase.ERROR, message, kind=JobEvent.Kind.ERROR, reason=message):
            ended.append(job.pk)
    return ended


def admission_pass() -> PassResult:
    """The queue timeout (SPEC Q6), the prediction's change log pruned, then one pass; a
    no-op pass (``ran=False``) while another one holds the lock."""
    fail_overdue_resubmissions()
    prune_queue_changes()
    return run_pass()
