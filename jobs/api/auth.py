"""Who calls the API: a personal token (``Authorization: Bearer``), or a signed-in browser
session, whose writes must carry the CSRF token like a form's. A token never signs anyone in
to the HTML pages: only this API reads it."""

from __future__ import annotations

from django.utils.translation import gettext as _
from ninja.errors import HttpError
from ninja.security import HttpBearer
from ninja.security import SessionAuth as NinjaSessionAuth

from console import tokens


class TokenAuth(HttpBearer):
    def authenticate(self, request, token):
        row = tokens.check(token)
        if row is None:
            return None
        request.user = row.user
        request.api_token = row
        return row.user


class SessionAuth(NinjaSessionAuth):
    """The browser's session (CSRF checked on writes)."""


def writable(request) -> None:
    """Refuse a write made with a read-only token (403)."""
    row = getattr(request, "api_token", None)
    if row is not None and not row.writes:
        raise HttpError(
            403, _("This token is read-only: make a read-and-write token to change jobs.")
        )
