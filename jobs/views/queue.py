"""/queue/: the queue in order for team leads (their project) and admins (the cluster)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, F, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from console import keyset
from console.htmx import render_page
from console.ratelimit import rate_limited
from jobs import operations
from jobs.admission.words import word_jobs
from jobs.models import Job, JobPrediction, Priority
from jobs.permissions import get_job_for_user
from jobs.views import queue_pages as pages
from jobs.views.lists import annotated_jobs, mark_changeable
from resources.quota_standing import every_shown, shown_for

ACCURACY_DAYS = 7
SLACK_SECONDS = 60


def accuracy(project=None) -> dict:
    """How often the latest start predicted at submit held, over the last days: counted by
    the database in one query, however many jobs the week saw."""
    now = timezone.now()
    rows = JobPrediction.objects.filter(
        made_at__gte=now - timedelta(days=ACCURACY_DAYS), latest_start__isnull=False
    )
    if project is not None:
        rows = rows.filter(job__project=project)
    slack = timedelta(seconds=SLACK_SECONDS)
    by = F("latest_start") + slack
    unstarted = Q(job__started_at__isnull=True)
    counts = rows.aggregate(
        held=Count("pk", filter=Q(job__started_at__lte=by)),
        late=Count("pk", filter=Q(job__started_at__gt=by)),
        overdue=Count("pk", filter=unstarted & Q(latest_start__lt=now - slack)),
        pending=Count("pk", filter=unstarted & Q(latest_start__gte=now - slack)),
    )
    held, missed = counts["held"], counts["late"] + counts["overdue"]
    decided = held + missed
    return {
        "held": held,
        "missed": missed,
        "pending": counts["pending"],
        "percent": round(100 * held / decided) if decided else None,
        "days": ACCURACY_DAYS,
    }


@require_GET
@login_required
def queue(request: HttpRequest) -> HttpResponse:
    """The queue in order, a page at a time. Everyone sees only the jobs they may see (SPEC
    P: their own and those shared with them; admins all); the others still count in the
    positions, and the page says how many there are. Priorities change only where the user
    may change the job."""
    user, project = request.user, request.project or None
    cluster = user.is_staff and request.GET.get("scope") != "project"
    if not cluster and project is None:
        raise PermissionDenied
    waiting = Job.objects.queued()
    jobs = annotated_jobs(user).queued()
    if not cluster:
        waiting, jobs = waiting.filter(project=project), jobs.filter(project=project)
    visible = jobs.count()
    mine = request.GET.get("mine") == "1"
    if mine:
        jobs = jobs.filter(owner=user)
    page = pages.page_of(jobs, request.GET, total=None if mine else visible)
    mark_changeable(page.rows, user)
    word_jobs(page.rows)
    scope = {"scope": "project"} if user.is_staff and not cluster else {}
    kept = scope | ({"mine": "1"} if mine else {})
    yours = pages.first_of(jobs if mine else jobs.filter(owner=user))
    return render_page(
        request,
        "jobs/queue.html",
        {
            "jobs": page.rows,
            "page": page,
            "pager": keyset.pager(page.links(kept)),
            "mine": mine,
            "everyone_url": pages.query(scope),
            "mine_url": pages.query(scope, mine="1"),
            "yours": yours,
            "yours_url": pages.query(kept, at=str(yours.pk)) if yours else None,
            "total": page.total,
            # An admin sees every job: nothing is hidden, and nothing need be counted.
            "hidden": 0 if user.is_staff else waiting.count() - visible,
            "cluster": cluster,
            "now": timezone.now(),
            "accuracy": accuracy(None if cluster else project),
            "quotas": every_shown() if cluster else shown_for([project]),
            "priorities": [
                (value, label)
                for value, label in Priority.choices
                if value != Priority.VERY_URGENT or user.is_staff
            ],
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
