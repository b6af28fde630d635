"""/jobs/<id>/terminal/<replica>/: the debug terminal's page (SPEC J20). The terminal itself
is xterm.js talking to :mod:`jobs.terminal.socket`; this page says whose shell it is."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from django.views.decorators.http import require_GET

from jobs.permissions import get_job_for_user
from jobs.terminal import access
from resources.inventory.identity import run_as_for

# xterm.js makes <style> elements of its own as it draws; the page's script gives each the
# request's nonce (static/console/terminal.js), so only those get in, never inline markup.
TERMINAL_CSP = {**settings.SECURE_CSP, "style-src": [CSP.SELF, CSP.NONCE]}


@require_GET
@login_required
@csp_override(TERMINAL_CSP)
def terminal_page(request: HttpRequest, pk: int, replica: str) -> HttpResponse:
    # 404 outside the user's scope, 403 for those who may see but not change (SPEC P).
    job, _ = get_job_for_user(request.user, pk, change=True)
    attempt = access.latest_attempt(job)
    labels = dict(access.replicas_of(attempt))
    if replica not in labels:
        raise Http404
    answer = access.check(request.user, job.pk, replica)
    # On a cluster the shell is in the pod, as the image's user; locally, the job's identity.
    on_cluster = attempt is not None and attempt.cluster_id is not None
    run_as = None if on_cluster else run_as_for(job.owner)
    return render(
        request,
        "jobs/terminal.html",
        {
            "job": job,
            "replica": replica,
            "label": labels[replica],
            "refusal": answer.words if isinstance(answer, access.Refusal) else "",
            "kept_until": access.kept_until(job, attempt),
            "run_as": run_as,
            "socket": reverse("job_terminal", args=[job.pk, replica]) + "socket/",
            "words": {str(code): str(words) for code, words in access.WORDS.items()},
        },
    )
