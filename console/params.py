"""Query and form parameters read one way everywhere: whole numbers, table paging, and
where a POST may send the user back.

``str.isdigit()`` is true for "²" or "٣", which ``int()`` refuses or reads as a number no one
typed; and a number of thousands of digits is refused by ``int()``, or by PostgreSQL when it
exceeds a bigint. Here only ASCII digits count, and only as many as a bigint holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.core.paginator import EmptyPage
from django.utils.http import url_has_allowed_host_and_scheme
from django_tables2 import RequestConfig

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


def configure_table(request, table, *, per_page: int, most: int = 100) -> None:
    """django-tables2's ``RequestConfig`` with ``page`` and ``per_page`` read as whole
    numbers and clamped: a bad page shows the first, one past the end the last, and a page
    holds 1 to ``most`` rows (``per_page=-1`` would otherwise fail the paginator)."""
    RequestConfig(request, paginate=False).configure(table)  # the order the headers ask for
    size = whole_number(request.GET.get(table.prefixed_per_page_field), low=1, high=most)
    number = whole_number(request.GET.get(table.prefixed_page_field), low=1) or 1
    try:
        table.paginate(per_page=size or per_page, page=number)
    except EmptyPage:
        table.paginate(per_page=size or per_page, page=table.paginator.num_pages)


def next_path(request, default: str) -> str:
    """Where a POST's ``next`` asks to go back to, if it is a path on this site; else
    ``default``. Only a path: ``redirect()`` would take a bare word for a view's name."""
    target = request.POST.get("next", "")
    if target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default
