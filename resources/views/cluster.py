"""/cluster/: where a spec could run right now (SPEC J25) and how big a job fits now."""

from __future__ import annotations

from functools import partial

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from console.htmx import render_page
from console.params import whole_numbers
from resources.forms.faults import kind_text
from resources.inventory import faults
from resources.models import Node, NodeFault
from resources.placement import availability

ROWS_PER_PAGE = 50


def _ids(request: HttpRequest, name: str) -> list[int]:
    return whole_numbers(request.GET.getlist(name))


def isolated_nodes(user, project) -> list[Node]:
    """Nodes the platform took out of service after a fault, of those the user may run on,
    with why and the injected faults still on them."""
    nodes = availability.visible_nodes(
        user, project, Node.objects.live().filter(isolated_at__isnull=False)
    )
    nodes = list(
        nodes.order_by("-isolated_at", "name").prefetch_related(
            Prefetch("faults", queryset=NodeFault.objects.active(), to_attr="active_faults")
        )
    )
    for node in nodes:
        node.why = faults.isolation_text(node)
        node.fault_texts = [kind_text(fault) for fault in node.active_faults]
    return nodes


@require_GET
@login_required
def cluster(request: HttpRequest) -> HttpResponse:
    # "specs" is what the job form sends when it asks for the availability of its choice.
    spec_ids = _ids(request, "spec") + _ids(request, "specs")
    model_ids = _ids(request, "model")
    result = availability.compute(
        request.user, request.project or None, spec_ids=spec_ids, model_ids=model_ids
    )
    page = Paginator(result.rows, ROWS_PER_PAGE).get_page(request.GET.get("page"))
    availability.describe_rows(page.object_list, result.chosen)
    query = request.GET.copy()
    query.pop("page", None)
    idle = sum(1 for row in result.rows if row.status == availability.IDLE)
    return render_page(
        request,
        "resources/cluster.html",
        {
            "result": result,
            "page": page,
            "query": query.urlencode(),
            "spec_ids": set(spec_ids),
            "model_ids": set(model_ids),
            "idle_count": idle,
            # Called by the template only when it draws the whole page, not the filters' part.
            "isolated": partial(isolated_nodes, request.user, request.project or None),
            "model_rows": [(model, result.demand.get(model.pk, 0)) for model in result.models],
        },
        fragment="availability",
    )
