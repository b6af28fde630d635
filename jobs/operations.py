"""What people do to existing jobs (SPEC O4–O8): stop, delete, adjust, develop.

Views check permissions (jobs.permissions) before calling these; these check the job's
state and say in plain words why an operation does not apply.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext

from console import limits
from console.words import said
from jobs import hooks, lifecycle
from jobs.models import DevEnvironment, Job, Phase, Priority, Status
from resources.models import Allocation


class NotApplicable(Exception):
    """The operation does not apply to the job as it is now; the message says why."""


def release(job: Job) -> None:
    Allocation.objects.live().filter(holder_kind="job", holder_id=job.pk).update(
        released_at=timezone.now()
    )


# The execution layer registers how to stop a job that holds processes (SPEC F7: each
# returns whether it did), and what to do with a deleted job's processes and files.
stoppers: list = []
forgetters: list = []


def stop(job: Job, user) -> None:
    if not job.is_live:
        raise NotApplicable(_("The job has already ended (%(status)s).") % {
            "status": job.get_status_display()
        })  # fmt: skip
    # The execution layer stops a job that holds processes; any other stops at once.
    if job.phase == Phase.QUEUED or not any(stopper(job, user) for stopper in stoppers):
        with transaction.atomic():
            message = said(gettext_noop("Stopped by %(user)s."), user=user)
            if not lifecycle.move(job, Phase.STOPPED, message, actor=user):
                raise NotApplicable(_("The job changed meanwhile: reload the page."))
            release(job)
    transaction.on_commit(hooks.queue_changed)


def delete(job: Job, user) -> None:
    """Delete a job; a live one is stopped first so nothing keeps running unseen."""
    if job.is_live:
        with contextlib.suppress(NotApplicable):
            stop(job, user)
    with transaction.atomic():
        release(job)
        for forget in forgetters:
            forget(job)
        job.delete()


def adjust_duration(job: Job, hours: int, user) -> None:
    """O6: a running job gets a new deadline, counted from its start; no restart."""
    offered = limits.current().durations_hours
    if job.status != Status.RUNNING:
        raise NotApplicable(_("Only a running job's duration can be adjusted."))
    if not 1 <= hours <= max(offered):
        top = max(offered)
        raise NotApplicable(
            ngettext("Pick from 1 to %(max)s hour.", "Pick from 1 to %(max)s hours.", top)
            % {"max": top}
        )
    started = job.started_at or timezone.now()
    deadline = started + timedelta(hours=hours)
    if deadline <= timezone.now():
        raise NotApplicable(
            ngettext(
                "The job has run longer than %(n)s hour already: pick a longer duration.",
                "The job has run longer than %(n)s hours already: pick a longer duration.",
                hours,
            )
            % {"n": hours}
        )
    updated = Job.objects.filter(pk=job.pk, status=Status.RUNNING).update(
        duration_hours=hours, deadline=deadline
    )
    if not updated:
        raise NotApplicable(_("The job changed meanwhile: reload the page."))
    old = job.duration_hours
    job.duration_hours, job.deadline = hours, deadline
    lifecycle.record(
        job,
        said(
            gettext_noop(
                "Duration changed from %(old)s h to %(new)s h by %(user)s; it ends by %(at)s."
            ),
            old=old,
            new=hours,
            user=user,
            at=timezone.localtime(deadline).strftime("%Y-%m-%d %H:%M"),
        ),
        actor=user,
    )


# pg advisory lock namespace of the urgent cap ("urg" in ASCII); the second key is the project.
URGENT_LOCK = 0x757267


class UrgentCapReached(NotApplicable):
    """The project holds as many urgent jobs as its cap allows."""

    def __init__(self, project, held: int, cap: int):
        self.project, self.held, self.cap = project, held, cap
        super().__init__(
            ngettext(
                "Project %(project)s already holds %(held)s urgent job; the cap is %(cap)s.",
                "Project %(project)s already holds %(held)s urgent jobs; the cap is %(cap)s.",
                held,
            )
            % {"project": project.name, "held": held, "cap": cap}
        )


def urgent_room(project, *, excluding: Job | None = None) -> tuple[int, int]:
    """(urgent jobs the project holds, the cap)."""
    held = Job.objects.live().filter(project=project, priority=Priority.URGENT)
    if excluding is not None:
        held = held.exclude(pk=excluding.pk)
    return held.count(), limits.current().urgent_jobs_per_project


def claim_urgent_place(project, *, excluding: Job | None = None) -> None:
    """Q4, race-free: raise UrgentCapReached unless the project has room for one more urgent
    job. Call it in the transaction that then saves the urgent job: the project's lock, held
    until that transaction ends, makes every other claim wait and then count the saved job."""
    if not connection.in_atomic_block:
        raise RuntimeError("claim an urgent place in the transaction that saves the job")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [URGENT_LOCK, project.pk])
    held, cap = urgent_room(project, excluding=excluding)
    if held >= cap:
        raise UrgentCapReached(project, held, cap)


def adjust_priority(job: Job, priority: int, user) -> None:
    """O7 / Q4: a queued job's priority, within what the user may pick and the urgent cap."""
    if job.status != Status.QUEUED:
        raise NotApplicable(_("Only a queued job's priority can be changed."))
    if priority not in Priority.values:
        raise NotApplicable(_("Pick normal, urgent or very urgent."))
    if priority == Priority.VERY_URGENT and not user.is_staff:
        raise NotApplicable(_("Only platform admins may pick “very urgent”."))
    if priority == job.priority:
        return
    old = Priority(job.priority).label
    with transaction.atomic():
        if priority == Priority.URGENT:
            claim_urgent_place(job.project, excluding=job)
        if not Job.objects.filter(pk=job.pk, status=Status.QUEUED).update(priority=priority):
            raise NotApplicable(_("The job changed meanwhile: reload the page."))
        job.priority = priority
        lifecycle.record(
            job,
            said(
                gettext_noop("Priority changed from %(old)s to %(new)s by %(user)s."),
                old=old,
                new=Priority(priority).label,
                user=user,
            ),
            actor=user,
        )
        transaction.on_commit(hooks.queue_changed)


def devenv_from_job(job: Job, user, name: str) -> DevEnvironment:
    """O8: a development environment prefilled from the job's configuration."""
    spec = job.spec or next(iter(job.ordered_specs()), None)
    env = DevEnvironment.objects.create(
        name=name, owner=user, project=job.project, image=job.image, spec=spec,
        algorithm=job.algorithm, command=job.command, from_job=job,
    )  # fmt: skip
    env.dataset_versions.set([mount.version_id for mount in job.datasets.all()])
    return env
