"""The JSON API at /api/v1/ (SPEC I1), with django-ninja: its OpenAPI document is made from
the operations' own type hints (docs/api.md says why this library).

The rules are the pages' own: a job is made through :mod:`jobs.submission` from the job
form, so the API refuses what the form refuses with the same words on the same fields; what
a caller may see and change is the pages' permission matrix (404 for what it may not see,
403 for what it may see but not change); writes count against the same rate limits (429
with ``Retry-After``). Messages are in the language ``Accept-Language`` asks for.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.utils.translation import gettext as _
from ninja import NinjaAPI

from jobs.api import changes, cluster, jobs, me, queue, runs
from jobs.api.auth import SessionAuth, TokenAuth

api = NinjaAPI(
    title="Training console API",
    version="1",
    description="Jobs, their logs and events, and the queue, as the console's pages show them.",
    auth=[TokenAuth(), SessionAuth()],
    urls_namespace="api",
    docs_url=None,  # the console's own page (jobs.views.api_docs), in its style and languages
)
api.add_router("/jobs", jobs.router)
api.add_router("/jobs", changes.router)
api.add_router("/jobs", runs.router)
api.add_router("/queue", queue.router)
api.add_router("/me", me.router)
api.add_router("", cluster.router)


@api.exception_handler(PermissionDenied)
def _forbidden(request, exc):
    return api.create_response(
        request, {"detail": str(exc) or _("You may not change this.")}, status=403
    )


@api.exception_handler(Http404)
def _not_found(request, exc):
    return api.create_response(request, {"detail": _("Not found.")}, status=404)
