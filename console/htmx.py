"""The one place that decides between a page and a fragment of it."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers


def render_page(
    request: HttpRequest,
    template: str,
    context: dict | None = None,
    *,
    fragment: str = "content",
    status: int = 200,
    only_fragment: bool = False,
) -> HttpResponse:
    """Render ``template`` whole, or only its ``fragment`` partial for an htmx request.

    Boosted requests and history restores want the whole page, since htmx swaps the body.
    ``only_fragment`` is for endpoints that exist to serve a fragment (e.g. a form refresh).
    """
    htmx = getattr(request, "htmx", None)
    partial = only_fragment or (
        bool(htmx) and not htmx.boosted and not htmx.history_restore_request
    )
    name = f"{template}#{fragment}" if partial else template
    response = render(request, name, context, status=status)
    patch_vary_headers(response, ("HX-Request",))
    return response
