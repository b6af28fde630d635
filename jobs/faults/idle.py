"""Idle capacity (SPEC G5): a running job that uses its boards less than the admin's
threshold for the admin's minutes is *idle*: its owner is told once (an event on its page,
an email), and with the admin's "stop" policy it is stopped with the checkpoint signal, so
that others get its boards.

Use is the boards' where the backend reports it (DCGM on Kubernetes, nvidia-smi here), else
the CPUs' against what the job asked for: each usage sample of the window counts, and one
aggregate query answers for every running job. A job is looked at once its current run has
lasted the whole window; the warning is kept in the attempt's watch (``idle``), so it is
given once per run, whichever worker looks first.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.core.cache import cache
from django.db import transaction
from django.db.models import Avg, Count, DateTimeField, F, FloatField, OuterRef, Q, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce, NullIf
from django.utils import timezone
from django.utils.translation import gettext_lazy, gettext_noop

from console import limits
from console.words import Said, counted, said
from jobs import lifecycle
from jobs.backend import stop_attempt
from jobs.faults import alerts
from jobs.faults.marks import mark_once
from jobs.models import Attempt, JobEvent, Phase

log = logging.getLogger(__name__)

KEY = "idle"  # in Attempt.watch; other keys there belong to the other watches
# The watch looks this often at most (beat calls the fault watch every second).
EVERY_SECONDS = 30
LAST_LOOK = "idle-watch:last"


def due(now: datetime | None = None) -> bool:
    """Whether the idle watch should look now; a cluster-wide throttle in the cache."""
    return cache.add(LAST_LOOK, (now or timezone.now()).isoformat(), EVERY_SECONDS)


def found_idle():
    """An expression for a job: when its run (the first of a batch job's running subtasks)
    was found idle, or None; the job list and the job page show it while the job runs."""
    warned = Attempt.objects.filter(job=OuterRef("pk"), ended_at__isnull=True, watch__has_key=KEY)
    at = Cast(KT(f"watch__{KEY}"), DateTimeField())
    return Subquery(warned.order_by("running_at", "pk").annotate(at=at).values("at")[:1])


def found_idle_of(job) -> datetime | None:
    """:func:`found_idle` for one job not read with it."""
    if not hasattr(job, "idle_since"):
        found = type(job).objects.filter(pk=job.pk).annotate(at=found_idle())
        job.idle_since = found.values_list("at", flat=True).first()
    return job.idle_since


def idle_attempts(now: datetime, threshold: int, minutes: int):
    """The running attempts not warned yet whose run has lasted ``minutes`` and whose
    average use over them is below ``threshold`` percent, with that average (``use``) and
    whether boards were measured (``boards``)."""
    since = now - timedelta(minutes=minutes)
    window = Q(samples__at__gte=since)
    cpu = (
        F("samples__cpu_percent")
        * 1000.0
        / NullIf(Cast("job__spec__cpu_millicores", FloatField()), 0.0)
    )
    return (
        Attempt.objects.filter(
            state=Attempt.State.RUNNING,
            ended_at__isnull=True,
            stop_cause="",
            running_at__lte=since,
            job__phase=Phase.RUNNING,
        )
        .exclude(watch__has_key=KEY)
        .annotate(
            use=Avg(Coalesce("samples__accelerator_util", cpu), filter=window),
            boards=Count("samples__accelerator_util", filter=window),
            seen=Count("samples", filter=window),
        )
        .filter(seen__gte=2, use__lt=threshold)
        .select_related("job", "job__owner", "job__project")
    )


def watch(now: datetime | None = None) -> list[int]:
    """One look; returns the ids of the attempts found idle (and warned) now."""
    settings = limits.current()
    threshold, minutes = settings.idle_utilisation_percent, settings.idle_minutes
    if threshold <= 0:
        return []
    now = now or timezone.now()
    found = []
    for attempt in idle_attempts(now, threshold, minutes):
        if _warn(attempt, now, minutes, settings.idle_policy == "stop"):
            found.append(attempt.pk)
    return found


def _warn(attempt: Attempt, now: datetime, minutes: int, stop: bool) -> bool:
    job = attempt.job
    with transaction.atomic():
        if not mark_once(attempt.pk, KEY, now.isoformat()):
            return False  # another worker warned first
        what = gettext_lazy("accelerator boards") if attempt.boards else gettext_lazy("CPUs")
        found = said(
            counted(
                "Its %(what)s were used %(use)s%% on average over the last %(minutes)s "
                "minute, below the idle threshold of %(threshold)s%%.",
                "Its %(what)s were used %(use)s%% on average over the last %(minutes)s "
                "minutes, below the idle threshold of %(threshold)s%%.",
                "minutes",
            ),
            what=what,
            use=f"{attempt.use:.1f}",
            minutes=minutes,
            threshold=limits.current().idle_utilisation_percent,
        )
        action = _action(job, stop)
        lifecycle.record(job, said(gettext_noop("%(found)s %(action)s"), found=found,
                                   action=action), kind=JobEvent.Kind.WARNING,
                         item="idle")  # fmt: skip
        if stop and Attempt.objects.filter(pk=attempt.pk, stop_cause="").update(
            stop_cause=Attempt.StopCause.IDLE
        ):
            seconds = job.graceful_shutdown_seconds
            transaction.on_commit(lambda: stop_attempt(attempt, seconds))
        alerts.later(job, "idle", found, action, [])
    log.info("job %s idle (%.1f%%)%s", job.pk, attempt.use, ": stopping" if stop else "")
    return True


def _action(job, stop: bool) -> Said:
    if stop:
        return said(
            gettext_noop(
                "It is stopped so that others get its boards (SIGTERM, so it saves a "
                "checkpoint; killed after %(seconds)s s)."
            ),
            seconds=job.graceful_shutdown_seconds,
        )
    return said(
        gettext_noop(
            "Nothing is done to it: if it does not need its boards now, stop it so that "
            "others get them."
        )
    )
