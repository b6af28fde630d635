from django.conf import settings
from django.http import HttpRequest


def console(request: HttpRequest) -> dict:
    """What the header needs on every page: the project switcher and the mode."""
    from console.models import Project

    user = getattr(request, "user", None)
    projects = (
        Project.objects.for_user(user).only("id", "name") if user and user.is_authenticated else []
    )
    return {
        "switcher_projects": projects,
        "current_project": getattr(request, "project", None),
        "demo_mode": settings.DEMO_MODE,
    }
