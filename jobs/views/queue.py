"""/queue/: the queue in order for team leads (their project) and admins (the cluster)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from console.htmx import render_page
from console.models import Membership, Role
from jobs import operations
from jobs.models import Job, JobPrediction, Priority
from jobs.queue_words import word_jobs

ACCURACY_DAYS = 7
SLACK_SECONDS = 60


def leads(user, project) -> bool:
    if user.is_staff:
        return True
    if project is None:
        return False
    return Membership.objects.filter(
        user=user, project=project, role__in=[Role.LEAD, Role.ADMIN]
    ).exists()


def accuracy(project=None) -> dict:
    """How often the latest start predicted at submit held, over the last days."""
    now = timezone.now()
    rows = JobPrediction.objects.filter(made_at__gte=now - timedelta(days=ACCURACY_DAYS))
    if project is not None:
        rows = rows.filter(job__project=project)
    held = missed = pending = 0
    for latest, started in rows.values_list("latest_start", "job__started_at"):
        if latest is None:
            continue
        deadline = latest + timedelta(seconds=SLACK_SECONDS)
        if started is not None:
            if started <= deadline:
                held += 1
            else:
                missed += 1
        elif now > deadline:
            missed += 1
        else:
            pending += 1
    decided = held + missed
    return {
        "held": held,
        "missed": missed,
        "pending": pending,
        "percent": round(100 * held / decided) if decided else None,
        "days": ACCURACY_DAYS,
    }


@require_GET
@login_required
def queue(request: HttpRequest) -> HttpResponse:
    project = request.project or None
    cluster = request.user.is_staff and request.GET.get("scope") != "project"
    if not cluster and project is None:
        raise PermissionDenied
    # Every member may see the project's queue; leads (and admins) may reorder it.
    jobs = Job.objects.queued().select_related("owner", "project")
    if not cluster:
        jobs = jobs.filter(project=project)
    jobs = jobs.order_by(
        F("queue_position").asc(nulls_last=True), "-priority", "-resubmitted", "submitted_at"
    )
    priorities = [
        (value, label)
        for value, label in Priority.choices
        if value != Priority.VERY_URGENT or request.user.is_staff
    ]
    shown = list(jobs[:500])
    word_jobs(shown)
    return render_page(
        request,
        "jobs/queue.html",
        {
            "jobs": shown,
            "total": jobs.count(),
            "cluster": cluster,
            "now": timezone.now(),
            "accuracy": accuracy(None if cluster else project),
            "priorities": priorities,
            "may_set": leads(request.user, project) or request.user.is_staff,
        },
    )


@require_POST
@login_required
def queue_priority(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(Job.objects.select_related("project"), pk=pk)
    if not leads(request.user, job.project):
        raise PermissionDenied
    try:
        operations.adjust_priority(job, int(request.POST.get("priority", "")), request.user)
        messages.success(
            request,
            _("%(name)s: priority is now %(p)s.")
            % {"name": job.name, "p": job.get_priority_display()},
        )
    except ValueError:
        messages.error(request, _("Pick a priority."))
    except operations.NotApplicable as exc:
        messages.error(request, f"{job.name}: {exc}")
    return redirect("queue")
