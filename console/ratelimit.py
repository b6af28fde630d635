"""Rate limits for the write endpoints a user can hammer (a priority changed a hundred times
in a few seconds is a hundred events and a hundred admission passes).

Each kind of write has a limit ``COUNT/SECONDS`` per user (``settings.RATE_LIMITS``, from
``RATE_LIMIT_<KIND>``). Counts live in the cache, which is Redis: ``add`` then ``incr`` are
atomic there, so every web process counts against the same number. Windows are fixed (they
start on multiples of SECONDS), so a burst across a window's edge may reach twice COUNT in
a short time; the bound per window holds. A request over the limit gets a 429 that says
what to wait for, and the view does not run.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.contrib.messages import ERROR
from django.contrib.messages.storage.base import Message
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

log = logging.getLogger(__name__)

# What each kind counts, as the refusal names it.
KINDS = {
    "priority": _("priority changes"),
    "job_change": _("job operations (stop, delete, duration)"),
    "submit": _("job submissions"),
    "devenv": _("new development environments"),
    "tool": _("tools started or stopped"),
    "catalog": _("catalog changes"),
    "settings": _("settings and inventory changes"),
    "account": _("changes to your API tokens and notifications"),
}


def hit(kind: str, user) -> int | None:
    """Count one request of ``kind`` by ``user``: None if it is allowed, else the seconds
    until the window ends."""
    count, seconds = settings.RATE_LIMITS[kind]
    now = time.time()
    window = int(now // seconds)
    key = f"ratelimit:{kind}:{user.pk}:{window}"
    try:
        cache.add(key, 0, timeout=seconds + 1)
        try:
            used = cache.incr(key)
        except ValueError:  # the key expired between add and incr: a new window
            cache.add(key, 0, timeout=seconds + 1)
            used = cache.incr(key)
    except Exception:  # any cache backend's own errors
        # Refusing every write because the cache is down would be worse than not counting.
        log.warning("Rate limit %s not counted: the cache is not answering", kind, exc_info=True)
        return None
    if used <= count:
        return None
    return max(1, math.ceil((window + 1) * seconds - now))


def refusal(kind: str, wait: int) -> str:
    count, seconds = settings.RATE_LIMITS[kind]
    return " ".join(
        [
            ngettext(
                "Too many %(what)s: at most %(count)d every %(seconds)d second, and nothing "
                "was changed this time.",
                "Too many %(what)s: at most %(count)d every %(seconds)d seconds, and nothing "
                "was changed this time.",
                seconds,
            )
            % {"what": KINDS[kind], "count": count, "seconds": seconds},
            ngettext("Try again in %(wait)d second.", "Try again in %(wait)d seconds.", wait)
            % {"wait": wait},
        ]
    )  # fmt: skip


def too_many(request: HttpRequest, kind: str, wait: int, back: str = "") -> HttpResponse:
    """The 429: under htmx only the messages area (console.js shows it in place), otherwise
    a page in the layout with a way back (``back``, the view's own page; else the dashboard)."""
    text = refusal(kind, wait)
    if getattr(request, "htmx", False):
        response = render(
            request, "includes/messages.html", {"messages": [Message(ERROR, text)]}, status=429
        )
    else:
        response = render(request, "429.html", {"text": text, "back": back}, status=429)
    response["Retry-After"] = str(wait)
    return response


def _way_back(name: str | tuple[str, ...], kwargs: dict) -> str:
    """The page a refused write came from: the first address of ``name`` (one or several)
    that takes the view's own arguments (``job_detail`` and the job's pk), or fewer of them
    (the kind without the pk), or none."""
    without_pk = {key: value for key, value in kwargs.items() if key != "pk"}
    for names in (name,) if isinstance(name, str) else name:
        for given in (kwargs, without_pk, {}):
            with contextlib.suppress(NoReverseMatch):
                return reverse(names, kwargs=given) if names else ""
    return ""


def rate_limited(kind: str, back: str | tuple[str, ...] = "") -> Callable:
    """Count a signed-in user's POSTs to the view as ``kind``; refuse those over the limit.
    Put it next to the view (under ``login_required``), so only real users' writes count.
    ``back``: the name of the page the refusal leads back to (given the view's arguments)."""
    if kind not in KINDS:
        raise ValueError(f"unknown rate limit kind {kind!r}")

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method == "POST" and request.user.is_authenticated:
                wait = hit(kind, request.user)
                if wait is not None:
                    return too_many(request, kind, wait, _way_back(back, kwargs))
            return view(request, *args, **kwargs)

        return wrapper

    return decorator
