"""The buttons on a cluster's settings page: test the connection, sync its nodes now.

Both use the saved settings and answer with an outcome panel (htmx swaps it in; without
htmx the whole edit page comes back with it). A cluster that does not answer is an outcome
to show, never an error page.
"""

from __future__ import annotations

from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.cache import patch_vary_headers
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from console.access import staff_required
from console.ratelimit import rate_limited
from resources import clusters, tasks
from resources.backends.base import BackendError
from resources.forms.clusters import ClusterForm
from resources.models import Cluster
from resources.views.inventory import KINDS

# What an admin can do about a problem the backend words (in English) for the logs.
HINTS = (
    ("(401)", _("Check the token: it may have expired or been revoked.")),
    ("(403)", _("Grant the console's account the permission named above.")),
    ("TLS error", _("Check the CA certificate: it must be the one that signed the API "
                    "server's certificate.")),
    ("connection refused", _("Check the address and port, and that the API server is up.")),
    ("unknown host name", _("Check the address: its host name is not known here.")),
    ("no answer within", _("Check that this machine can reach the address (firewall, VPN, "
                           "proxy).")),
    ("Volcano is not installed", _("Install Volcano on the cluster: jobs run there as "
                                   "Volcano Jobs.")),
    ("kubeconfig", _("Check the kubeconfig and its context, or paste it again.")),
    ("credentials", _("Enter the credentials again in the form above.")),
)  # fmt: skip


def hint(problem: str) -> str:
    for needle, advice in HINTS:
        if needle in problem:
            return str(advice)
    return ""


def _cluster(pk: int) -> Cluster:
    return get_object_or_404(
        Cluster.objects.select_related("default_pool"), pk=pk, retired_at__isnull=True
    )


def _outcome(request: HttpRequest, cluster: Cluster, context: dict) -> HttpResponse:
    context["object"] = cluster
    if request.htmx:
        response = render(request, "resources/cluster_actions.html#outcome", context)
    else:
        context.update(kind=KINDS["clusters"], form=ClusterForm(instance=cluster))
        response = render(request, "resources/inventory_form.html", context)
    patch_vary_headers(response, ("HX-Request",))
    return response


@require_POST
@staff_required
@rate_limited("settings", back="inventory_edit")
def cluster_test(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    cluster = _cluster(pk)
    check = clusters.check(cluster)
    problems = [(problem, hint(problem)) for problem in check.problems]
    return _outcome(request, cluster, {"check": check, "problems": problems})


@require_POST
@staff_required
@rate_limited("settings", back="inventory_edit")
def cluster_sync(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    cluster = _cluster(pk)
    try:
        with transaction.atomic():
            report = tasks.sync_cluster(cluster)
    except BackendError as error:
        return _outcome(request, cluster, {"sync_error": (str(error), hint(str(error)))})
    counts = [
        (_("New nodes"), len(report.created)),
        (_("Updated"), len(report.updated)),
        (_("Unchanged"), len(report.unchanged)),
        (_("Marked not ready (still running jobs)"), len(report.marked_not_ready)),
        (_("Removed (gone from the cluster)"), len(report.removed)),
    ]
    return _outcome(request, cluster, {"sync": counts})
