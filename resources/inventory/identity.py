"""Whose a job's processes are: every console user has an identity of their own.

A user's number is ``JOB_UID_BASE + user id`` (their own group has the same number) and each
project a group ``JOB_GID_BASE + project id``, so the numbers are stable for as long as the
console's rows are, and the same on every backend: the local backend makes them users of its
machine, the Kubernetes backend renders them as ``runAsUser``/``fsGroup``.
"""

from __future__ import annotations

from django.conf import settings

from resources.backends.base import RunAs


def user_number(user_id: int) -> int:
    return settings.JOB_UID_BASE + user_id


def project_number(project_id: int) -> int:
    return settings.JOB_GID_BASE + project_id


def run_as_for(user) -> RunAs:
    """The identity ``user``'s jobs run as: their own user and group, and the groups of the
    projects they belong to (what is shared with a project is shared with its group)."""
    from console.models import Membership

    projects = Membership.objects.filter(user=user).values_list("project_id", flat=True)
    number = user_number(user.pk)
    return RunAs(
        uid=number,
        gid=number,
        groups=tuple(sorted(project_number(pk) for pk in projects)),
        name=f"console-u{user.pk}",
    )
