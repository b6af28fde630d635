"""/settings/quotas/: departments, their projects and the quotas of each (SPEC G1), for
platform admins, with where every quota stands now and who changed what."""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from console.access import staff_required
from console.htmx import render_page
from console.models import Department
from console.ratelimit import rate_limited
from resources.forms.quotas import DepartmentForm, QuotaForm, audited, delete_quota, record
from resources.models import AcceleratorModel, Cluster, Quota, QuotaChange, ResourcePool
from resources.quota_standing import capacity, every_shown
from resources.quotas import ZERO, Scope

HISTORY_SHOWN = 20


def overcommitted() -> list[dict]:
    """Scopes where the guarantees of the top of the tree (departments, and projects in
    none) add up to more boards than the cluster has: promises borrowing cannot keep."""
    have = capacity()
    promised: dict[Scope, object] = {}
    top = Quota.objects.filter(project__department__isnull=True) | Quota.objects.filter(
        department__isnull=False
    )
    for quota in top:
        scope = Scope(quota.accelerator_model_id, quota.pool_id)
        promised[scope] = promised.get(scope, ZERO) + quota.guaranteed
    models = AcceleratorModel.objects.in_bulk([scope.model for scope in promised])
    pools = ResourcePool.objects.in_bulk([s.pool for s in promised if s.pool is not None])
    return [
        {
            "model": models[scope.model],
            "pool": pools.get(scope.pool),
            "promised": total,
            "have": have.get(scope, 0),
        }
        for scope, total in promised.items()
        if total > have.get(scope, 0)
    ]


@require_http_methods(["GET"])
@staff_required
def quota_settings(request: HttpRequest) -> HttpResponse:
    departments = Department.objects.prefetch_related("projects")
    return render_page(
        request,
        "resources/quotas.html",
        {
            "departments": departments,
            "shown": every_shown(),
            "overcommitted": overcommitted(),
            "history": QuotaChange.objects.select_related("changed_by")[:HISTORY_SHOWN],
            "clusters": Cluster.objects.live().only(
                "name", "mirrored_queues", "queues_mirrored_at", "queues_problem"
            ),
        },
    )


def _edit(request: HttpRequest, form_class, obj, what: str, saved_message) -> HttpResponse:
    """The form of a quota or a department: saved with its history, or shown again with
    every field as typed and the reason on the field that breaks the tree."""
    form = form_class(request.POST or None, instance=obj)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            messages.success(request, saved_message(form.save(user=request.user)))
            return redirect("quota_settings")
        status = 422
    return render_page(
        request, "resources/quota_form.html", {"form": form, "object": obj, "what": what},
        status=status,
    )  # fmt: skip


@require_http_methods(["GET", "POST"])
@staff_required
@rate_limited("settings", back="quota_settings")
def quota_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    quota = get_object_or_404(Quota, pk=pk) if pk else None
    return _edit(
        request, QuotaForm, quota, "quota",
        lambda saved: _("Saved the quota of %(holder)s.") % {"holder": saved.holder},
    )  # fmt: skip


@require_POST
@staff_required
@rate_limited("settings", back="quota_settings")
def quota_delete(request: HttpRequest, pk: int) -> HttpResponse:
    quota = get_object_or_404(Quota.objects.select_related("project", "department"), pk=pk)
    holder = quota.holder
    delete_quota(quota, request.user)
    messages.success(request, _("Removed a quota of %(holder)s.") % {"holder": holder})
    return redirect("quota_settings")


@require_http_methods(["GET", "POST"])
@staff_required
@rate_limited("settings", back="quota_settings")
def department_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    department = get_object_or_404(Department, pk=pk) if pk else None
    return _edit(
        request, DepartmentForm, department, "department",
        lambda saved: _("Saved %(name)s.") % {"name": saved},
    )  # fmt: skip


@require_POST
@staff_required
@rate_limited("settings", back="quota_settings")
@transaction.atomic
def department_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """Its projects stay, in no department; its quotas go, each in the history."""
    department = get_object_or_404(Department, pk=pk)
    for quota in department.quotas.select_related("accelerator_model", "pool"):
        record(department, quota.scope, audited(quota), None, request.user)
    names = sorted(department.projects.values_list("name", flat=True))
    if names:
        record(department, _("projects"), names, None, request.user)
    department.delete()
    messages.success(request, _("Removed %(name)s.") % {"name": department})
    return redirect("quota_settings")
