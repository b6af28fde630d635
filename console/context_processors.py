from django.conf import settings
from django.http import HttpRequest


def console(request: HttpRequest) -> dict:
    """What the header needs on every page: the project switcher and the mode."""
    return {
        "switcher_projects": getattr(request, "user_projects", []),
        "current_project": getattr(request, "project", None),
        "demo_mode": settings.DEMO_MODE,
    }
