"""The dashboard's card about the user's own jobs."""

from __future__ import annotations

from django.db.models import Count

from jobs.models import Job, Status


def my_jobs_panel(request) -> tuple[str, dict]:
    counts = dict(
        Job.objects.filter(owner=request.user)
        .values_list("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
    )
    recent = Job.objects.filter(owner=request.user).only("pk", "name", "status", "phase")[:5]
    return "jobs/dashboard_panel.html", {
        "counts": [(status, label, counts.get(status, 0)) for status, label in Status.choices],
        "recent": recent,
    }
