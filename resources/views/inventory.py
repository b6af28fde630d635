"""/settings/inventory/…: create, edit and retire what jobs run on (platform admins only).

One set of views serves every kind; ``KINDS`` says, per kind, its model, form and columns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib import messages
from django.db.models import Count, Max, Model, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from console.access import staff_required
from console.htmx import render_page
from console.ratelimit import rate_limited
from resources import hooks
from resources.forms import inventory as forms
from resources.forms.clusters import ClusterForm
from resources.models import (
    AcceleratorModel,
    Allocation,
    Cluster,
    DriverVersion,
    Image,
    Node,
    NodeSpec,
    ResourcePool,
)


@dataclass(frozen=True)
class Kind:
    slug: str
    model: type[Model]
    form: type
    title: Promise
    columns: tuple[tuple[Promise, str], ...]  # (header, template of the cell)
    related: tuple[str, ...] = ()
    fields_template: str = "includes/form_fields.html"
    edit_aside: str = ""  # a template shown under the form of an existing object
    listed: Callable[[QuerySet], QuerySet] | None = None  # what the list adds to each row

    @property
    def singular(self):
        return self.model._meta.verbose_name


KINDS = {
    kind.slug: kind
    for kind in (
        Kind("accelerators", AcceleratorModel, forms.AcceleratorModelForm,
             gettext_lazy("Accelerator models"),
             ((gettext_lazy("Kind"), "kind"), (gettext_lazy("Memory per board"), "memory"))),
        Kind("drivers", DriverVersion, forms.DriverVersionForm, gettext_lazy("Driver versions"),
             ((gettext_lazy("Kind"), "kind"),)),
        Kind("specs", NodeSpec, forms.NodeSpecForm, gettext_lazy("Node specs"),
             ((gettext_lazy("Resources per node"), "summary"),), ("accelerator_model",)),
        Kind("pools", ResourcePool, forms.ResourcePoolForm, gettext_lazy("Dedicated pools"),
             ((gettext_lazy("Projects allowed"), "projects"), (gettext_lazy("Nodes"), "nodes"))),
        Kind("nodes", Node, forms.NodeForm, gettext_lazy("Nodes"),
             ((gettext_lazy("Status"), "status"), (gettext_lazy("Resources"), "resources"),
              (gettext_lazy("Pool"), "pool"), (gettext_lazy("Source"), "source")),
             ("accelerator_model", "driver_version", "pool")),
        Kind("images", Image, forms.ImageForm, gettext_lazy("Images"),
             ((gettext_lazy("Reference"), "reference"), (gettext_lazy("Scopes"), "scopes"),
              (gettext_lazy("Board types"), "board_kinds"),
              (gettext_lazy("Local runtime"), "local_runtime"))),
        Kind("clusters", Cluster, ClusterForm, gettext_lazy("Clusters"),
             ((gettext_lazy("Connection"), "connection"),
              (gettext_lazy("Namespace / queue"), "namespace"),
              (gettext_lazy("Pool"), "default_pool"),
              (gettext_lazy("Nodes"), "node_count"), (gettext_lazy("Last sync"), "last_sync")),
             ("default_pool",), "resources/cluster_fields.html", "resources/cluster_actions.html",
             lambda clusters: clusters.annotate(
                 node_count=Count("nodes", filter=Q(nodes__retired_at__isnull=True)),
                 last_sync=Max("nodes__last_heartbeat"))),
    )
}  # fmt: skip


def _kind(slug: str) -> Kind:
    try:
        return KINDS[slug]
    except KeyError:
        raise Http404 from None


def _form_class(kind: Kind, obj):
    # A backend's node: sync owns its hardware facts, the admin its pool and cordon.
    if kind.model is Node and obj is not None and obj.source != "manual":
        return forms.NodeSettingsForm
    return kind.form


def in_use_by(obj) -> list[tuple[str, str]]:
    """Live workloads holding ``obj`` (a node's allocations, or what jobs report)."""
    uses = list(hooks.users_of(obj))
    if isinstance(obj, Node):
        known = {label for label, _url in uses}
        for label in (
            Allocation.objects.live().filter(node=obj).values_list("label", flat=True).distinct()
        ):
            if label not in known:
                uses.append((label, ""))
    return uses


@require_http_methods(["GET"])
@staff_required
def inventory_list(request: HttpRequest, kind: str) -> HttpResponse:
    spec = _kind(kind)
    objects = spec.model.objects.all()
    if spec.related:
        objects = objects.select_related(*spec.related)
    if spec.model is ResourcePool:
        objects = objects.prefetch_related("projects", "nodes")
    if spec.listed:
        objects = spec.listed(objects)
    show_retired = request.GET.get("retired") == "1"
    if not show_retired:
        objects = objects.filter(retired_at__isnull=True)
    return render_page(
        request,
        "resources/inventory_list.html",
        {"kind": spec, "objects": objects, "show_retired": show_retired},
    )


@require_http_methods(["GET", "POST"])
@sensitive_post_parameters("token", "kubeconfig")  # a cluster's: never in error reports
@staff_required
@rate_limited("settings", back="inventory_list")
def inventory_edit(request: HttpRequest, kind: str, pk: int | None = None) -> HttpResponse:
    spec = _kind(kind)
    obj = get_object_or_404(spec.model, pk=pk) if pk else None
    form_class = _form_class(spec, obj)
    form = form_class(request.POST or None, instance=obj)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            saved = form.save()
            messages.success(request, _("Saved %(name)s.") % {"name": saved})
            return redirect("inventory_list", kind=spec.slug)
        status = 422
    return render_page(
        request,
        "resources/inventory_form.html",
        {"kind": spec, "form": form, "object": obj},
        status=status,
    )


@require_http_methods(["GET", "POST"])
@staff_required
@rate_limited("settings", back="inventory_list")
def inventory_retire(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    spec = _kind(kind)
    obj = get_object_or_404(spec.model, pk=pk, retired_at__isnull=True)
    uses = in_use_by(obj)
    if request.method == "POST" and not uses:
        obj.retire()
        messages.success(request, _("Retired %(name)s.") % {"name": obj})
        return redirect("inventory_list", kind=spec.slug)
    if request.method == "POST":
        messages.error(
            request,
            _("%(name)s is in use by live jobs, so it stays. Stop or wait for them first.")
            % {"name": obj},
        )
    return render_page(
        request,
        "resources/inventory_retire.html",
        {"kind": spec, "object": obj, "uses": uses},
        status=409 if uses and request.method == "POST" else 200,
    )
