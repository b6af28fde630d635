"""The console's pages for tools: a job's TensorBoard (SPEC O9) and a development
environment's JupyterLab (O8). Each page shows the tool inside the console (an iframe of
``/tools/<id>/``, which the ASGI proxy serves), starts it, stops it, and, polled while open,
follows its state and renews the viewer's ticket (jobs/tools/access.py)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from django.views.decorators.http import require_http_methods

from console.htmx import render_page
from console.ratelimit import rate_limited
from console.words import said
from jobs.models import DevEnvironment, Tool
from jobs.permissions import get_devenv_for_user, get_job_for_user
from jobs.tools import access, launch, service


@dataclass
class Subject:
    """What a tool page is about: a job (TensorBoard) or an environment (JupyterLab)."""

    kind: str
    job: object = None
    env: object = None
    may_stop_any: bool = False

    @property
    def tool(self) -> Tool | None:
        return service.live_tool(job=self.job) if self.job else service.live_tool(env=self.env)

    @property
    def last(self) -> Tool | None:
        tools = self.job.tools if self.job else self.env.tools
        return tools.filter(kind=self.kind).order_by("-created_at").first()

    @property
    def page(self) -> str:
        if self.job:
            return reverse("job_tensorboard", args=[self.job.pk])
        return reverse("devenv_lab", args=[self.env.pk])

    @property
    def status_url(self) -> str:
        return self.page + "status/"

    @property
    def stop_url(self) -> str:
        return self.page + "stop/"

    def may_stop(self, user, tool: Tool) -> bool:
        return self.may_stop_any or tool.owner_id == user.pk

    def start(self, user) -> Tool:
        if self.job:
            return service.open_tensorboard(self.job, user)
        return service.open_jupyter(self.env, user)


def _job_subject(request, pk) -> Subject:
    job, may_change = get_job_for_user(request.user, pk)
    return Subject(Tool.Kind.TENSORBOARD, job=job, may_stop_any=may_change)


def _env_subject(request, pk) -> Subject:
    env = get_devenv_for_user(
        request.user, pk, queryset=DevEnvironment.objects.select_related("image", "from_job")
    )
    if env.owner_id != request.user.pk:
        # It runs code as its owner: an admin may read the page, never step inside.
        raise PermissionDenied
    return Subject(Tool.Kind.JUPYTER, env=env, may_stop_any=True)


def _page(request: HttpRequest, subject: Subject) -> HttpResponse:
    if request.method == "POST":
        try:
            subject.start(request.user)
        except launch.Unavailable as problem:
            messages.error(request, str(problem.said))
        return redirect(subject.page)
    tool = subject.tool
    if tool is not None:
        tool = service.check(tool)
    response = render_page(
        request,
        "jobs/tool_page.html",
        {"subject": subject, "tool": tool if tool and tool.live else None, "last": subject.last},
    )
    if tool is not None and tool.live:
        access.give_ticket(response, request.user, tool)
    return response


def _status(request: HttpRequest, subject: Subject) -> HttpResponse:
    tool = subject.tool
    was_starting = tool is not None and tool.state == Tool.State.STARTING
    if tool is not None:
        tool = service.check(tool)
    response = render(
        request,
        "jobs/tool_page.html#status",
        {"subject": subject, "tool": tool if tool and tool.live else None, "last": subject.last},
    )
    if tool is None or not tool.live or (was_starting and tool.state == Tool.State.RUNNING):
        response["HX-Refresh"] = "true"  # show the tool (or why it ended) in the page
    elif tool.live:
        access.give_ticket(response, request.user, tool)
    return response


def _stop(request: HttpRequest, subject: Subject) -> HttpResponse:
    tool = subject.tool
    if tool is not None:
        if not subject.may_stop(request.user, tool):
            raise PermissionDenied
        why = said(gettext_noop("Stopped by %(user)s."), user=request.user.get_username())
        service.stop(tool, why, user=request.user)
        messages.success(request, _("%(tool)s stopped.") % {"tool": tool.get_kind_display()})
    return redirect(subject.page)


@require_http_methods(["GET", "POST"])
@login_required
@rate_limited("tool", back="job_detail")
def job_tensorboard(request: HttpRequest, pk: int) -> HttpResponse:
    return _page(request, _job_subject(request, pk))


@require_http_methods(["GET"])
@login_required
def job_tensorboard_status(request: HttpRequest, pk: int) -> HttpResponse:
    return _status(request, _job_subject(request, pk))


@require_http_methods(["POST"])
@login_required
@rate_limited("tool", back="job_detail")
def job_tensorboard_stop(request: HttpRequest, pk: int) -> HttpResponse:
    return _stop(request, _job_subject(request, pk))


@require_http_methods(["GET", "POST"])
@login_required
@rate_limited("tool", back="devenv_detail")
def devenv_lab(request: HttpRequest, pk: int) -> HttpResponse:
    return _page(request, _env_subject(request, pk))


@require_http_methods(["GET"])
@login_required
def devenv_lab_status(request: HttpRequest, pk: int) -> HttpResponse:
    return _status(request, _env_subject(request, pk))


@require_http_methods(["POST"])
@login_required
@rate_limited("tool", back="devenv_detail")
def devenv_lab_stop(request: HttpRequest, pk: int) -> HttpResponse:
    return _stop(request, _env_subject(request, pk))
