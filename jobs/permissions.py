"""Others' access (SPEC P) with django-guardian, and the one way views fetch a job.

A job's owner and platform admins may do everything. Others in the job's project get what
its others' access grants, through the project's group: read-only is ``view_job``,
read-write adds ``change_job`` (adjust duration and priority, stop, delete).
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404
from guardian.shortcuts import assign_perm, remove_perm

from console.sharing import Access
from jobs.models import DevEnvironment, Job, JobGroupObjectPermission

VIEW = "view_job"
CHANGE = "change_job"


def grant(job: Job) -> None:
    """Make the project group's permissions on ``job`` match its others' access."""
    group = job.project.group
    JobGroupObjectPermission.objects.filter(content_object=job).delete()
    if job.others_access in (Access.READ_ONLY, Access.READ_WRITE):
        assign_perm(VIEW, group, job)
    if job.others_access == Access.READ_WRITE:
        assign_perm(CHANGE, group, job)


def revoke_all(job: Job) -> None:
    for perm in (VIEW, CHANGE):
        remove_perm(perm, job.project.group, job)


def can_change(user, job: Job) -> bool:
    if user.is_staff or job.owner_id == user.pk:
        return True
    return JobGroupObjectPermission.objects.filter(
        content_object=job, group__user=user, permission__codename=CHANGE
    ).exists()


def get_job_for_user(user, pk, *, change: bool = False, queryset=None) -> tuple[Job, bool]:
    """The job if ``user`` may see it (404 otherwise), and whether they may change it.

    With ``change=True`` a user who may see but not change it gets 403.
    """
    base = queryset if queryset is not None else Job.objects.all()
    try:
        job = base.visible_to(user).select_related("owner", "project").get(pk=pk)
    except (Job.DoesNotExist, ValueError, TypeError):
        raise Http404 from None
    may_change = can_change(user, job)
    if change and not may_change:
        raise PermissionDenied
    return job, may_change


def get_devenv_for_user(user, pk, *, queryset=None) -> DevEnvironment:
    """A development environment is its owner's (and admins'): 404 for anyone else."""
    base = queryset if queryset is not None else DevEnvironment.objects.all()
    if not user.is_staff:
        base = base.filter(owner=user)
    try:
        return base.get(pk=pk)
    except (DevEnvironment.DoesNotExist, ValueError, TypeError):
        raise Http404 from None
