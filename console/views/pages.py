"""The dashboard, projects and the header's project switcher."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from console import hooks
from console.htmx import render_page
from console.models import Heartbeat, Membership, Project, Role
from console.params import next_path, whole_number


@require_GET
@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    memberships = (
        Membership.objects.filter(user=request.user).select_related("project").order_by("project")
    )
    seen = {beat.name: beat for beat in Heartbeat.objects.all()}
    processes = [
        (_("Worker"), seen.get(Heartbeat.WORKER)),
        (_("Scheduler"), seen.get(Heartbeat.SCHEDULER)),
    ]
    panels = [panel(request) for panel in hooks.dashboard_panels]
    return render_page(
        request,
        "console/dashboard.html",
        {"memberships": memberships, "processes": processes, "panels": panels},
    )


@require_GET
@login_required
def project_detail(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_object_or_404(Project.objects.for_user(request.user), slug=slug)
    role = project.role_of(request.user)
    members = project.memberships.select_related("user").order_by("role", "user__username")
    return render_page(
        request,
        "console/project_detail.html",
        {
            "project": project,
            "members": members,
            "my_role": Role(role).label if role else None,
            "panels": [panel(request, project) for panel in hooks.project_panels],
        },
    )


@require_POST
@login_required
def switch_project(request: HttpRequest) -> HttpResponse:
    try:
        project = Project.objects.for_user(request.user).get(
            pk=whole_number(request.POST.get("project"))
        )
    except Project.DoesNotExist as exc:
        raise Http404(_("No such project.")) from exc
    request.session["project_id"] = project.pk
    messages.success(request, _("Now working in project %(name)s.") % {"name": project.name})
    return redirect(next_path(request, "dashboard"))
