"""/queue/: the queue in order for team leads (their project) and admins (the cluster)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from console.htmx import render_page
from console.ratelimit import rate_limited
from jobs import operations
from jobs.admission.words import word_jobs
from jobs.models import Job, JobPrediction, Priority
from jobs.permissions import get_job_for_user
from jobs.views.lists import annotated_jobs, mark_changeable

ACCURACY_DAYS = 7
SLACK_SECONDS = 60


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
    """The queue in order. Everyone sees only the jobs they may see (SPEC P: their own and
    those shared with them; admins all); the others still count in the positions, and the
    page says how many there are. Priorities change only where the user may change the job."""
    user, project = request.user, request.project or None
    cluster = user.is_staff and request.GET.get("scope") != "project"
    if not cluster and project is None:
        raise PermissionDenied
    waiting = Job.objects.queued()
    if not cluster:
        waiting = waiting.filter(project=project)
    jobs = annotated_jobs(user).queued()
    if not cluster:
        jobs = jobs.filter(project=project)
    jobs = jobs.order_by(
        F("queue_position").asc(nulls_last=True), "-priority", "-resubmitted", "submitted_at"
    )
    priorities = [
        (value, label)
        for value, label in Priority.choices
        if value != Priority.VERY_URGENT or user.is_staff
    ]
    shown = list(jobs[:500])
    mark_changeable(shown, user)
    word_jobs(shown)
    total = jobs.count()
    return render_page(
        request,
        "jobs/queue.html",
        {
            "jobs": shown,
            "total": total,
            "hidden": waiting.count() - total,
            "cluster": cluster,
            "now": timezone.now(),
            "accuracy": accuracy(None if cluster else project),
            "priorities": priorities,
        },
    )


@require_POST
@login_required
@rate_limited("priority", back="queue")
def queue_priority(request: HttpRequest, pk: int) -> HttpResponse:
    """O7 from the queue page: the same right as on the job's page (SPEC P: read-write)."""
    job, _may = get_job_for_user(request.user, pk, change=True)
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
