"""Operations on one job, each behind a confirmation (SPEC O3–O8)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods

from console import names
from console.htmx import render_page
from console.params import whole_number
from console.ratelimit import rate_limited
from jobs import operations
from jobs.permissions import get_job_for_user


def _confirm(request, job, action: str, *, status: int = 200, **context) -> HttpResponse:
    return render_page(
        request, "jobs/confirm.html", {"job": job, "action": action, **context}, status=status
    )


def _done(request, job, text: str) -> HttpResponse:
    messages.success(request, text)
    return redirect(job)


def _refused(request, job, exc: operations.NotApplicable) -> HttpResponse:
    messages.error(request, str(exc))
    return redirect(job)


@require_http_methods(["GET", "POST"])
@login_required
@rate_limited("job_change", back="job_detail")
def job_stop(request: HttpRequest, pk: int) -> HttpResponse:
    job, _may = get_job_for_user(request.user, pk, change=True)
    if request.method == "GET":
        return _confirm(request, job, "stop")
    try:
        operations.stop(job, request.user)
    except operations.NotApplicable as exc:
        return _refused(request, job, exc)
    return _done(request, job, _("Stopping %(name)s.") % {"name": job.name})


@require_http_methods(["GET", "POST"])
@login_required
@rate_limited("job_change", back="job_detail")
def job_delete(request: HttpRequest, pk: int) -> HttpResponse:
    job, _may = get_job_for_user(request.user, pk, change=True)
    if request.method == "GET":
        return _confirm(request, job, "delete")
    name = job.name
    operations.delete(job, request.user)
    messages.success(request, _("Deleted %(name)s.") % {"name": name})
    return redirect("job_list")


@require_http_methods(["POST"])
@login_required
@rate_limited("job_change", back="job_detail")
def job_duration(request: HttpRequest, pk: int) -> HttpResponse:
    job, _may = get_job_for_user(request.user, pk, change=True)
    hours = whole_number(request.POST.get("hours"))
    if hours is None:
        return _refused(request, job, operations.NotApplicable(_("Enter a whole number of hours.")))
    try:
        operations.adjust_duration(job, hours, request.user)
    except operations.NotApplicable as exc:
        return _refused(request, job, exc)
    text = ngettext("Duration is now %(n)s hour.", "Duration is now %(n)s hours.", hours)
    return _done(request, job, text % {"n": hours})


@require_http_methods(["POST"])
@login_required
@rate_limited("priority", back="job_detail")
def job_priority(request: HttpRequest, pk: int) -> HttpResponse:
    job, _may = get_job_for_user(request.user, pk, change=True)
    priority = whole_number(request.POST.get("priority"))
    if priority is None:
        return _refused(request, job, operations.NotApplicable(_("Pick a priority.")))
    try:
        operations.adjust_priority(job, priority, request.user)
    except operations.NotApplicable as exc:
        return _refused(request, job, exc)
    return _done(request, job, _("Priority is now %(p)s.") % {"p": job.get_priority_display()})


@require_http_methods(["GET", "POST"])
@login_required
@rate_limited("devenv", back="job_detail")
def job_devenv(request: HttpRequest, pk: int) -> HttpResponse:
    job, _may = get_job_for_user(request.user, pk)
    # A job's name has at most 40 characters too: shorten it before the suffix.
    suggested = f"{job.name[: names.DNS_LABEL.max_length - 4]}-dev"
    if request.method == "GET":
        return _confirm(request, job, "devenv", suggested=suggested)
    typed = request.POST.get("name", "")
    name = typed.strip() or suggested
    problem = names.DNS_LABEL.problem(name)
    if problem:
        return _confirm(request, job, "devenv", suggested=typed, name_error=problem, status=422)
    env = operations.devenv_from_job(job, request.user, name)
    messages.success(request, _("Development environment %(name)s created.") % {"name": name})
    return redirect(env)
