"""Site-wide request handling: htmx redirects and messages, and the current project."""

from __future__ import annotations

from django.contrib.messages import get_messages
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils.functional import SimpleLazyObject


class HtmxMessagesMiddleware:
    """For htmx requests: redirects become ``HX-Location``, messages are swapped out of band.

    A plain 302 would make htmx follow it and swap the next page into the target;
    ``HX-Location`` makes it navigate instead.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        htmx = getattr(request, "htmx", None)
        if not htmx:
            return response
        if 300 <= response.status_code < 400 and response.has_header("Location"):
            location = response["Location"]
            response = HttpResponse(status=204)
            response["HX-Location"] = location
            return response
        content_type = response.get("Content-Type", "")
        if (
            "text/html" in content_type
            # 204 and 304 have no body: one written anyway is read as the next answer
            and response.status_code not in (204, 304)
            and not response.streaming
            and "HX-Redirect" not in response
            and "HX-Location" not in response
        ):
            stored = list(get_messages(request))
            if stored:
                response.write(
                    render_to_string(
                        "includes/messages.html",
                        {"messages": stored, "oob": True},
                        request=request,
                    )
                )
        return response


def _user_projects(request: HttpRequest) -> list:
    from console.models import Project

    if not request.user.is_authenticated:
        return []
    return list(Project.objects.for_user(request.user).only("id", "name", "slug"))


def _current_project(request: HttpRequest):
    projects = request.user_projects
    chosen = request.session.get("project_id")
    return next((p for p in projects if p.pk == chosen), projects[0] if projects else None)


class CurrentProjectMiddleware:
    """``request.project``: the project picked in the header switcher, and
    ``request.user_projects``: those the user may pick. Lazy, and one query for both.

    For a user in no project ``request.project`` is a lazy object around None, which is
    false but not ``None``: code that tests ``is None`` gets ``request.project or None``."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.user_projects = SimpleLazyObject(lambda: _user_projects(request))
        request.project = SimpleLazyObject(lambda: _current_project(request))
        return self.get_response(request)


class AdminToFieldMiddleware:
    """Django's admin takes an empty ``?_to_field=`` for the name of a field and fails on it
    (a server error on its change and delete pages); empty means "not given", so drop it."""

    PARAMETER = "_to_field"

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        for name in ("GET", "POST"):
            values = getattr(request, name)
            if self.PARAMETER in values and not values.get(self.PARAMETER):
                values = values.copy()
                del values[self.PARAMETER]
                setattr(request, name, values)
        return self.get_response(request)
