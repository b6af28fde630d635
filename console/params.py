"""Query and form parameters read one way everywhere: whole numbers, and where a POST may
send the user back.

``str.isdigit()`` is true for "²" or "٣", which ``int()`` refuses or reads as a number no one
typed; and a number of thousands of digits is refused by ``int()``, or by PostgreSQL when it
exceeds a bigint. Here only ASCII digits count, and only as many as a bigint holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.utils.http import url_has_allowed_host_and_scheme

DIGITS = re.compile(r"[0-9]{1,18}")  # 18 digits always fit a PostgreSQL bigint


def whole_number(value: object, *, low: int = 0, high: int | None = None) -> int | None:
    """The non-negative whole number ``value`` spells in ASCII digits, moved into
    ``low``..``high``; None for anything else (missing, signed, decimal, too long)."""
    if not isinstance(value, str) or not DIGITS.fullmatch(value):
        return None
    number = max(int(value), low)
    return number if high is None else min(number, high)


def whole_numbers(values: Iterable[object]) -> list[int]:
    """The whole numbers among ``values`` (e.g. ticked ids), in order; others are left out."""
    return [number for number in map(whole_number, values) if number is not None]


def next_path(request, default: str) -> str:
    """Where a POST's ``next`` asks to go back to, if it is a path on this site; else
    ``default``. Only a path: ``redirect()`` would take a bare word for a view's name."""
    target = request.POST.get("next", "")
    if target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default
