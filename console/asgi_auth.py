"""Who is asking, for the connections the ASGI entry point serves outside Django's views.

The same login as every page: the session cookie, read through Django's session engine and
``get_user`` (which also checks the session's password hash, so a logout or a password
change ends access at once). A WebSocket must also come from this site's own pages: a
browser sends the session cookie with a cross-site WebSocket handshake too.
"""

from __future__ import annotations

from http.cookies import SimpleCookie
from importlib import import_module
from types import SimpleNamespace
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user
from django.contrib.auth.models import AnonymousUser

from console.db import run_sync


def headers_of(scope) -> dict[str, str]:
    """The request's headers, lower-case names; repeated ones joined as HTTP allows
    (``, ``; cookies with ``; ``)."""
    found: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        if name in found:  # cookies split over several headers are joined as one header
            value = found[name] + ("; " if name == "cookie" else ", ") + value
        found[name] = value
    return found


def cookies_of(scope) -> dict[str, str]:
    jar = SimpleCookie()
    try:
        jar.load(headers_of(scope).get("cookie", ""))
    except Exception:  # a malformed cookie header is no login
        return {}
    return {name: morsel.value for name, morsel in jar.items()}


async def user_of(scope):
    """The logged-in user of the request, or AnonymousUser."""
    key = cookies_of(scope).get(settings.SESSION_COOKIE_NAME)
    if not key:
        return AnonymousUser()
    return await run_sync(_user_of_session, key)


def _user_of_session(key: str):
    engine = import_module(settings.SESSION_ENGINE)
    return get_user(SimpleNamespace(session=engine.SessionStore(key)))


def same_origin(scope) -> bool:
    """True when the request's Origin (if any) is this host: the check a WebSocket needs."""
    headers = headers_of(scope)
    origin = headers.get("origin")
    if origin is None:
        return scope["type"] != "websocket"
    host = headers.get("host", "")
    return bool(host) and urlsplit(origin).netloc == host
