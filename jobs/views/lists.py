"""/jobs/: the job list with search (O1), the batch view, and bulk delete (O5)."""

from __future__ import annotations

from datetime import datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import Exists, OuterRef
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST

from console import keyset
from console.htmx import render_page
from console.params import whole_number, whole_numbers
from console.ratelimit import rate_limited
from jobs import operations
from jobs.admission.words import word_jobs
from jobs.faults.idle import found_idle
from jobs.filtersets import JobFilter
from jobs.models import Job, JobGroupObjectPermission, JobSpecChoice, JobType
from jobs.tables import JobTable

PER_PAGE = 25
MOST_PER_PAGE = 100
# The orders the table's headers offer (``sort=``), as the database sorts them: each column,
# then the job's id, so that every row has a key of its own (console/keyset.py).
SORTS = {
    "name": (("name", str),),
    "status": (("status", str),),
    "priority": (("priority", int),),
    "mode": (("mode", str),),
    "owner": (("owner__username", str),),
    "project": (("project__name", str),),
    "created_at": (("created_at", datetime),),
}
DEFAULT_SORT = "-created_at"


def annotated_jobs(user):
    """Visible jobs with, in the same query, their spec names and whether the user may
    change them: the list costs the same few queries whatever the page size."""
    jobs = Job.objects.visible_to(user).select_related("owner", "project", "standing")
    specs = JobSpecChoice.objects.filter(job=OuterRef("pk")).order_by("order").values("spec__name")
    if user.is_staff:
        from django.db.models import Value

        may_change = Value(True)
    else:
        may_change = Exists(
            JobGroupObjectPermission.objects.filter(
                content_object=OuterRef("pk"), group__user=user, permission__codename="change_job"
            )
        )
    return jobs.annotate(
        spec_names=ArraySubquery(specs), shared_change=may_change, idle_since=found_idle()
    )


def mark_changeable(jobs, user) -> None:
    """``job.may_change`` for jobs of :func:`annotated_jobs` (owner, read-write, admin)."""
    for job in jobs:
        job.may_change = job.shared_change or job.owner_id == user.pk


def search(user, params) -> JobFilter:
    """The search ``params`` ask for over the jobs ``user`` may see (validate it first)."""
    return JobFilter(params, queryset=annotated_jobs(user), user=user)


def listed(user, filters: JobFilter, params) -> tuple[keyset.Order, keyset.Page]:
    """The page of ``filters``' jobs ``params`` ask for (``sort``, ``per_page``, ``after``,
    ``before``), counted cheaply: /jobs/ and the API's list."""
    order = order_of(params.get("sort"))
    size = whole_number(params.get("per_page"), low=1, high=MOST_PER_PAGE) or PER_PAGE
    rows = filters.qs  # the search validated first: its filters are applied twice
    counted = filters.filter_queryset(Job.objects.visible_set(user))
    searching = any(value not in (None, "") for value in filters.form.cleaned_data.values())
    every = None if searching else Job.objects.visible_ids(user)
    return order, keyset.page_of(rows, order, params, size, counted=counted, every=every)


@require_GET
@login_required
def job_list(request: HttpRequest) -> HttpResponse:
    """The jobs a user may see, newest first or as a header asks, a page at a time by key:
    the first, the last and a searched page cost the same with a thousand jobs or a million."""
    filters = search(request.user, request.GET)
    order, page = listed(request.user, filters, request.GET)
    mark_changeable(page.rows, request.user)
    word_jobs(page.rows)
    # What a page's links keep: the search and the page size; the pager keeps the order too.
    kept = {
        name: value
        for name, value in request.GET.items()
        if value and name not in ("after", "before", "sort")
    }
    table = JobTable(page.rows, order.name, kept)
    chosen = {"sort": order.name} if order.name != DEFAULT_SORT else {}
    batch = request.GET.get("job_type") == JobType.BATCH
    return render_page(
        request,
        "jobs/job_list.html",
        {
            "table": table,
            "filter": filters,
            "batch": batch,
            "page": page,
            "pager": page.pager(kept | chosen),
            "sort": chosen.get("sort", ""),
        },
        fragment="results",
    )


def order_of(sort: object) -> keyset.Order:
    """The order ``sort=`` names (``-`` first for descending), or the newest first."""
    known = isinstance(sort, str) and sort.removeprefix("-") in SORTS
    name = sort if known else DEFAULT_SORT
    column = name.removeprefix("-")
    return keyset.Order(name, SORTS[column], descending=name.startswith("-"))


@require_POST
@login_required
@rate_limited("job_change", back="job_list")
def bulk_delete(request: HttpRequest) -> HttpResponse:
    ids = set(whole_numbers(request.POST.getlist("ids")))
    jobs = list(annotated_jobs(request.user).filter(pk__in=ids))
    allowed = [j for j in jobs if j.shared_change or j.owner_id == request.user.pk]
    refused = len(ids) - len(allowed)
    if not allowed:
        messages.error(request, _("Tick the jobs to delete first (only jobs you may change)."))
        return redirect("job_list")
    if request.POST.get("confirm") != "yes":
        return render_page(
            request,
            "jobs/confirm_bulk_delete.html",
            {"jobs": allowed, "refused": refused},
        )
    for job in allowed:
        operations.delete(job, request.user)
    messages.success(
        request,
        ngettext("Deleted %(n)d job.", "Deleted %(n)d jobs.", len(allowed)) % {"n": len(allowed)},
    )
    if refused:
        messages.warning(
            request,
            ngettext(
                "%(n)d job was left alone: you may not delete it.",
                "%(n)d jobs were left alone: you may not delete them.",
                refused,
            )
            % {"n": refused},
        )
    return redirect("job_list")
