"""What a cluster says about a job, told once on the job's events: why it waits there (the
queue, the scheduler, an image it cannot pull), and that the console lost touch with the
cluster or found it again."""

from __future__ import annotations

from django.utils.translation import gettext_noop

from console.words import said
from jobs import lifecycle
from jobs.models import Attempt, JobEvent
from resources.backends.base import WorkloadStatus

UNREACHABLE = "Lost touch with the cluster"


def unreachable(attempt: Attempt, why: str) -> None:
    """Its cluster's API does not answer: said once on the job; nothing else changes (the
    job keeps running there, and is followed again when the API is back)."""
    if attempt.reason.startswith(UNREACHABLE):
        return
    reason = f"{UNREACHABLE} ({why})"[:500]
    Attempt.objects.filter(pk=attempt.pk).update(reason=reason)
    attempt.reason = reason
    lifecycle.record(
        attempt.job,
        said(
            gettext_noop(
                "Lost touch with the cluster: %(reason)s. The job is left as it is there and "
                "followed again when the cluster answers."
            ),
            reason=why,
        ),
        kind=JobEvent.Kind.WARNING,
    )


def why(attempt: Attempt, status: WorkloadStatus) -> None:
    """A cluster says why a job waits (the queue, the scheduler, an image it cannot pull):
    each new reason once, as an event on the job."""
    reason = status.reason[:500]
    if reason == attempt.reason or reason == "stopping":
        return
    back = attempt.reason.startswith(UNREACHABLE)
    Attempt.objects.filter(pk=attempt.pk).update(reason=reason)
    attempt.reason = reason
    if back:
        lifecycle.record(attempt.job, said(gettext_noop("The cluster answers again.")))
    if reason:
        trouble = "Err" in reason or "BackOff" in reason
        lifecycle.record(
            attempt.job,
            said(gettext_noop("On the cluster: %(reason)s"), reason=reason),
            kind=JobEvent.Kind.WARNING if trouble else JobEvent.Kind.INFO,
        )
