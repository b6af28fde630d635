"""/api/v1/me: who the caller is, for a client to check its token."""

from __future__ import annotations

from django.utils.translation import gettext_noop
from ninja import Router, Schema

from console.models import Project

router = Router(tags=["me"])


class ProjectOut(Schema):
    slug: str
    name: str


class MeOut(Schema):
    username: str
    admin: bool
    token: str | None
    scope: str | None
    projects: list[ProjectOut]


@router.get("", response=MeOut, summary=gettext_noop("Who you are"))
def me(request):
    row = getattr(request, "api_token", None)
    projects = Project.objects.for_user(request.user).order_by("name")
    return {
        "username": request.user.get_username(),
        "admin": request.user.is_staff,
        "token": row.name if row else None,
        "scope": row.scope if row else None,
        "projects": [{"slug": p.slug, "name": p.name} for p in projects],
    }
