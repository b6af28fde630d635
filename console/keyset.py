"""A long list a page at a time, by key rather than by number.

A page starts after, or ends before, the key of the row next to it: the values of the
columns the list is sorted by, then the row's id. The database walks its index from that key
and stops after a page, wherever the page is; an OFFSET would read every row before it, so the
last page of a million jobs would cost a million rows. The last page is the first one of the
reversed order.

How many rows there are is counted only up to :data:`COUNT_CAP`: beyond it a page says "of
more than 10,000", and costs the same whatever the list holds.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from django.db.models import F, Q
from django.utils.formats import number_format
from django.utils.translation import gettext as _

COUNT_CAP = 10_000
END = "end"  # ``before=end``: the last page
LONGEST_KEY = 600  # characters: a longer ``after``/``before`` is not a key of ours


def _aware(value: object) -> datetime:
    moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    if moment is None or moment.tzinfo is None:
        raise ValueError(value)
    return moment


def _whole(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) >= 2**63:
        raise ValueError(value)  # beyond a bigint, PostgreSQL would refuse the comparison
    return value


def _text(value: object) -> str:
    if not isinstance(value, str) or "\x00" in value:
        raise ValueError(value)  # PostgreSQL text holds no NUL
    value.encode()  # nor a lone surrogate (UnicodeEncodeError, a ValueError)
    return value


# What a key's value may be for a column of each kind, read back from the URL.
KINDS: dict[type, Callable[[object], object]] = {int: _whole, str: _text, datetime: _aware}


@dataclass(frozen=True)
class Order:
    """A list's order: ``columns`` (field path and the Python type of its values), then the
    row's id, all ascending or all descending. ``name`` tags the keys, so that a key made
    for another order (a header clicked since) is not read as one of this order's."""

    name: str
    columns: tuple[tuple[str, type], ...]
    descending: bool = False

    @property
    def paths(self) -> tuple[str, ...]:
        return (*(path for path, _kind in self.columns), "pk")

    def sort(self, rows, *, reverse: bool = False):
        down = self.descending != reverse
        return rows.order_by(*(F(path).desc() if down else F(path).asc() for path in self.paths))

    def beyond(self, values: tuple, *, forward: bool) -> Q:
        """The rows after ``values`` (``forward``) or before them, in this order. The first
        column's bound comes first on its own, so the index walk starts at the key."""
        up = forward != self.descending
        strictly, at_least = ("gt", "gte") if up else ("lt", "lte")
        paths = self.paths
        either = Q()
        for i, path in enumerate(paths):
            same = dict(zip(paths[:i], values[:i], strict=True))
            either |= Q(**same, **{f"{path}__{strictly}": values[i]})
        return Q(**{f"{paths[0]}__{at_least}": values[0]}) & either

    def values_of(self, row) -> tuple:
        values = []
        for path in self.paths:
            value = row
            for step in path.split("__"):
                value = getattr(value, step)
            values.append(value)
        return tuple(values)

    def key(self, row) -> str:
        plain = [v.isoformat() if isinstance(v, datetime) else v for v in self.values_of(row)]
        text = json.dumps([self.name, *plain], separators=(",", ":"), ensure_ascii=False)
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    def parse(self, text: object) -> tuple | None:
        """The values a key of this order holds; None for anything else."""
        if not isinstance(text, str) or not text or len(text) > LONGEST_KEY:
            return None
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            found = json.loads(raw.decode())
            if not isinstance(found, list) or found[:1] != [self.name]:
                return None
            kinds = (*(kind for _path, kind in self.columns), int)
            if len(found) != len(kinds) + 1:
                return None
            return tuple(KINDS[kind](v) for kind, v in zip(kinds, found[1:], strict=True))
        except (ValueError, binascii.Error, UnicodeDecodeError):
            return None


def capped_count(rows) -> int | None:
    """How many ``rows`` there are, or None when more than :data:`COUNT_CAP`. ``rows`` may
    be a union of id lists (``QuerySet.union``), counted as it is."""
    rows = rows.order_by() if rows.query.combinator else rows.order_by().values("pk")
    found = rows[: COUNT_CAP + 1].count()
    return None if found > COUNT_CAP else found


@dataclass
class Page:
    rows: list
    total: int | None  # None: more than COUNT_CAP
    start: int | None  # rows before this page; None: more than COUNT_CAP
    has_previous: bool
    has_next: bool
    order: Order

    @property
    def end(self) -> int | None:
        return None if self.start is None else self.start + len(self.rows)

    def links(self, kept: Mapping[str, str]) -> dict[str, str]:
        """The first, previous, next and last pages' query strings, with ``kept``."""
        found = {}
        if self.has_previous:
            found["first"] = query(kept)
            found["previous"] = query(kept, before=self.order.key(self.rows[0]))
        if self.has_next:
            found["next"] = query(kept, after=self.order.key(self.rows[-1]))
            found["last"] = query(kept, before=END)
        return found

    def pager(self, kept: Mapping[str, str]) -> list[tuple[str, str | None]]:
        return pager(self.links(kept))

    def summary(self) -> str:
        """ "26–50 of 1,234", or as much of it as was counted."""
        return summary(self.start, self.end, self.total, len(self.rows), last=not self.has_next)


def page_of(
    rows, order: Order, params: Mapping[str, str], size: int, counted=None, every=None
) -> Page:
    """The page ``params`` asks for: after (``after``) or before (``before``) a row's key,
    ``before=end`` for the last; else, or for a key that is not one, the first.
    ``counted``: the same rows as a query that counts them cheaply, if ``rows`` is one that
    walks an order cheaply but would read every row to count; ``every``: cheaper still to
    count all of them, but not to filter (see :func:`capped_count`)."""
    counted = rows if counted is None else counted
    ordered = order.sort(rows)
    before_text = params.get("before")
    before = None if before_text == END else order.parse(before_text)
    after = None if before_text == END or before else order.parse(params.get("after"))
    if before_text == END or before:
        walked = order.sort(rows, reverse=True)
        if before:
            walked = walked.filter(order.beyond(before, forward=False))
        found = list(walked[: size + 1])
        more_before, page = len(found) > size, found[:size][::-1]
        more_after = bool(page) and before is not None
    else:
        walked = ordered.filter(order.beyond(after, forward=True)) if after else ordered
        found = list(walked[: size + 1])
        more_after, page = len(found) > size, found[:size]
        more_before = bool(page) and after is not None
    if not page:
        if before_text == END or (after is None and before is None):
            return Page([], 0, 0, False, False, order)
        return page_of(rows, order, {"before": END} if after else {}, size)  # past an end
    if more_after and before is not None:  # checked, not assumed: the key's row may be gone
        more_after = ordered.filter(order.beyond(order.values_of(page[-1]), forward=True)).exists()
    if more_before and after is not None:
        more_before = ordered.filter(order.beyond(order.values_of(page[0]), forward=False)).exists()
    total = capped_count(counted if every is None else every)
    if not more_before:
        start = 0
    elif not more_after:  # the last page: what comes before it is the rest
        start = None if total is None else total - len(page)
    else:
        start = capped_count(counted.filter(order.beyond(order.values_of(page[0]), forward=False)))
    return Page(page, total, start, more_before, more_after, order)


def query(kept: Mapping[str, str], **more: str) -> str:
    """A query string of a list's page: what it keeps (filters, order) and ``more``."""
    return "?" + urlencode({**kept, **more})


def pager(links: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """The pager's four buttons, each with its link or None (shown disabled)."""
    names = (
        ("first", _("« First")),
        ("previous", _("‹ Previous")),
        ("next", _("Next ›")),
        ("last", _("Last »")),
    )
    return [(label, links.get(name)) for name, label in names]


def summary(
    start: int | None, end: int | None, total: int | None, shown: int, *, last: bool = False
) -> str:
    def number(n: int) -> str:
        return number_format(n, force_grouping=True)

    if start is not None and total is not None:
        return _("%(first)s–%(last)s of %(total)s") % {
            "first": number(start + 1), "last": number(end), "total": number(total),
        }  # fmt: skip
    if start is not None:
        return _("%(first)s–%(last)s of more than %(cap)s") % {
            "first": number(start + 1), "last": number(end), "cap": number(COUNT_CAP),
        }  # fmt: skip
    if last:
        return _("the last %(shown)s of more than %(cap)s") % {
            "shown": number(shown), "cap": number(COUNT_CAP),
        }  # fmt: skip
    return _("%(shown)s past the first %(cap)s") % {
        "shown": number(shown), "cap": number(COUNT_CAP),
    }  # fmt: skip
