"""Development environments (SPEC O8): the user's list, one environment's page, and its
deletion. Its JupyterLab's pages are in ``tools``; creating one from a job in
``operations``, a job back from one in ``form``."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from console.htmx import render_page
from console.ratelimit import rate_limited
from jobs.models import DevEnvironment, Tool
from jobs.permissions import get_devenv_for_user
from jobs.tools import launch, service


@require_http_methods(["GET"])
@login_required
def devenv_list(request: HttpRequest) -> HttpResponse:
    """The user's development environments, each with its JupyterLab's state (one query for
    the environments, one for their live tools)."""
    envs = list(
        DevEnvironment.objects.filter(owner=request.user)
        .select_related("image", "spec", "from_job")
        .order_by("-created_at")[:200]
    )
    live = {
        tool.devenv_id: tool
        for tool in Tool.objects.filter(devenv__in=envs, state__in=service.LIVE)
    }
    rows = [(env, live.get(env.pk)) for env in envs]
    return render_page(request, "jobs/devenv_list.html", {"rows": rows})


def _env(request: HttpRequest, pk: int) -> DevEnvironment:
    return get_devenv_for_user(
        request.user,
        pk,
        queryset=DevEnvironment.objects.select_related(
            "image", "spec", "algorithm", "from_job", "owner"
        ),
    )


@require_http_methods(["GET"])
@login_required
def devenv_detail(request: HttpRequest, pk: int) -> HttpResponse:
    env = _env(request, pk)
    context = {
        "env": env,
        "lab": service.live_tool(env=env),
        "work_folder": launch.work_folder(env),
        "datasets": list(env.dataset_versions.select_related("dataset")),
    }
    return render_page(request, "jobs/devenv_detail.html", context)


@require_http_methods(["GET", "POST"])
@login_required
@rate_limited("devenv", back="devenv_list")
def devenv_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """Delete an environment (its owner, or a platform admin tidying up): its JupyterLab
    stops; the notebooks in its folder stay in the owner's storage."""
    env = _env(request, pk)
    context = {
        "env": env,
        "lab": service.live_tool(env=env),
        "work_folder": launch.work_folder(env),
    }
    if request.method == "GET":
        return render_page(request, "jobs/devenv_delete.html", context)
    with transaction.atomic():
        service.discard(Tool.objects.filter(devenv=env))
        env.delete()
    messages.success(
        request,
        _("Development environment %(name)s deleted; its folder %(folder)s is kept.")
        % {"name": env.name, "folder": context["work_folder"]},
    )
    return redirect("devenv_list")
