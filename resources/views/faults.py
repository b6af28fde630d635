"""/settings/faults/: inject a fault on a node and clear it (platform admins only), and
/cluster/'s button that returns an isolated node to service.

Injection is for drills, demos and tests: what a fault does to the jobs on the node is the
jobs app's business (its inspection reads injected states like real ones).
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods, require_POST

from console.access import staff_required
from console.htmx import render_page
from console.ratelimit import rate_limited
from resources.forms.faults import FaultForm, effect_text, kind_text, outcome
from resources.inventory import faults
from resources.models import FaultKind, Node, NodeFault

RECENT_ACTS = 20


def _listed(queryset) -> list[NodeFault]:
    rows = list(queryset.select_related("node", "created_by"))
    for fault in rows:
        fault.kind_text = kind_text(fault)
        fault.effect_text = effect_text(fault)
    return rows


@require_http_methods(["GET", "POST"])
@staff_required
@rate_limited("settings", back="settings_faults")
def fault_page(request: HttpRequest) -> HttpResponse:
    # An empty POST is still a submission: its errors are shown, not a blank form.
    form = FaultForm(request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST":
        fault = form.inject(request.user) if form.is_valid() else None
        if fault is not None:
            messages.success(request, outcome(fault))
            return redirect("settings_faults")
        status = 422
    return render_page(
        request,
        "resources/faults.html",
        {
            "form": form,
            "active": _listed(NodeFault.objects.active()),
            "acts": _listed(
                NodeFault.objects.filter(kind__in=(FaultKind.KILL, FaultKind.FREEZE))[:RECENT_ACTS]
            ),
        },
        status=status,
    )


@require_POST
@staff_required
@rate_limited("settings", back="settings_faults")
def fault_clear(request: HttpRequest, pk: int) -> HttpResponse:
    fault = get_object_or_404(NodeFault.objects.select_related("node"), pk=pk)
    words = {"fault": kind_text(fault), "node": fault.node.name}
    if faults.clear(fault):
        messages.success(
            request,
            _("Cleared %(fault)s on %(node)s: its checks read the node's real state again.")
            % words,
        )
    else:
        messages.info(request, _("%(fault)s on %(node)s was already cleared.") % words)
    return redirect("settings_faults")


@require_POST
@staff_required
@rate_limited("settings", back="cluster")
def node_return(request: HttpRequest, pk: int) -> HttpResponse:
    node = get_object_or_404(Node.objects.live(), pk=pk)
    if node.isolated_at is None:
        messages.info(request, _("%(node)s is not isolated.") % {"node": node.name})
        return redirect("cluster")
    cleared = faults.return_to_service(node)
    text = _("%(node)s is back in service: new jobs may start there again.") % {"node": node.name}
    if cleared:
        more = ngettext(
            "Cleared %(n)s injected fault on it.", "Cleared %(n)s injected faults on it.", cleared
        ) % {"n": cleared}
        # Two sentences: a space between them in English, none in Chinese.
        text = _("%(first)s %(second)s") % {"first": text, "second": more}
    messages.success(request, text)
    return redirect("cluster")
