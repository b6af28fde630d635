"""Busy is not broken: when the database or Redis cannot answer (saturated, restarting,
away), a page says so with 503 and ``Retry-After`` instead of a server error with a trace.

:func:`unavailable` tells such a failure from a bug by the exceptions it was raised from;
the error handler (console/views/errors.py), the tools' proxy and the Celery tasks use it.
"""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils import translation

# Seconds a browser (or a script) is asked to wait before trying again.
RETRY_AFTER_SECONDS = 5


def _unavailable_types() -> tuple[type[BaseException], ...]:
    import psycopg
    from kombu.exceptions import OperationalError as BrokerError
    from psycopg_pool import PoolTimeout
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeout

    # OperationalError covers a refused or dropped connection, a full pool (PoolTimeout),
    # "too many clients", a server shutting down, and a lock or statement timeout: each is
    # worth trying again, none is a bug of the page.
    return (
        OperationalError,
        InterfaceError,
        psycopg.OperationalError,
        psycopg.InterfaceError,
        PoolTimeout,
        RedisConnectionError,
        RedisTimeout,
        BrokerError,
    )


UNAVAILABLE = _unavailable_types()


def unavailable(error: BaseException | None) -> bool:
    """Whether ``error``, or one it was raised from or while handling, says a server could
    not answer."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, UNAVAILABLE):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def mark(request: HttpRequest) -> None:
    """This request met an unavailable server: what fails after it (a session saved on the
    way out, say) is the same outage, not a new bug."""
    request.console_busy = True


def is_marked(request: HttpRequest) -> bool:
    return bool(getattr(request, "console_busy", False))


def response(request: HttpRequest | None) -> HttpResponse:
    """The "busy, try again" page: no database, no session, no cache needed to draw it."""
    language = translation.get_language_from_request(request) if request else "en"
    with translation.override(language):
        body = render_to_string(
            "503.html",
            {
                "retry_after": RETRY_AFTER_SECONDS,
                "path": request.get_full_path() if request else "/",
                "posted": request is not None and request.method not in ("GET", "HEAD"),
            },
        )
    answer = HttpResponse(body, status=503)
    answer["Retry-After"] = str(RETRY_AFTER_SECONDS)
    answer["Cache-Control"] = "no-store"
    # htmx leaves the page as it was on an error status; say which one the poll met.
    answer["HX-Reswap"] = "none"
    return answer


class OutageLogFilter(logging.Filter):
    """One line, not a trace, for a request or task that met an unavailable server: under
    an outage every request fails the same way, and a trace each would bury everything
    else in the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and unavailable(record.exc_info[1]):
            error = record.exc_info[1]
            record.msg = f"{record.getMessage()} (server unavailable: {_first_line(error)})"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
