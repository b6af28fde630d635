"""The queue a page at a time, by key (SPEC Q, issue of the 30,000-job queue).

A page starts after, or ends before, the key of the row next to it: ``(place, id)``, where
the place is the job's queue position and a job no pass has placed yet comes after every
position, in the order it came. The database walks the index from that key and stops after
a page, wherever the page is; an OFFSET would count every row before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db.models import Q

from console import keyset
from console.keyset import query
from console.params import whole_number
from jobs.models.standing import UNPLACED, queue_place

PAGE_SIZE = 50
KEY = re.compile(r"([0-9]{1,10})-([0-9]{1,18})")
LAST = f"{UNPLACED + 1}-0"  # before every key: the last page


def placed(jobs):
    """The jobs with their ``place`` and standing, in queue order. Every queued job has its
    standing row: joined as such (inner), the database walks the standings' index in order
    and stops after a page, rather than sorting the whole queue."""
    jobs = jobs.filter(standing__isnull=False).select_related("standing")
    return jobs.annotate(place=queue_place()).order_by("place", "pk")


def parse(text: object) -> tuple[int, int] | None:
    """``"12-3456"`` as (place 12, id 3456); None for anything else."""
    found = KEY.fullmatch(text) if isinstance(text, str) else None
    return (int(found[1]), int(found[2])) if found else None


def _after(key: tuple[int, int], *, inclusive: bool = False) -> Q:
    place, pk = key
    return Q(place__gt=place) | Q(place=place, **{"pk__gte" if inclusive else "pk__gt": pk})


def _before(key: tuple[int, int]) -> Q:
    place, pk = key
    return Q(place__lt=place) | Q(place=place, pk__lt=pk)


def key_of(job) -> str:
    return f"{job.place}-{job.pk}"


@dataclass
class Page:
    rows: list
    total: int
    start: int  # how many rows come before this page
    has_previous: bool
    has_next: bool
    focus: int | None  # the job asked for with ``at``, shown first

    def links(self, kept: dict[str, str]) -> dict[str, str]:
        """The first, previous, next and last pages' query strings, with ``kept``."""
        found = {}
        if self.has_previous:
            found["first"] = query(kept)
            found["previous"] = query(kept, before=key_of(self.rows[0]))
        if self.has_next:
            found["next"] = query(kept, after=key_of(self.rows[-1]))
            found["last"] = query(kept, before=LAST)
        return found

    @property
    def end(self) -> int:
        return self.start + len(self.rows)

    def summary(self) -> str:
        return keyset.summary(self.start, self.end, self.total, len(self.rows))


def page_of(jobs, params, total: int | None = None) -> Page:
    """The page ``params`` asks for: ``at`` (a job's id: the page it starts), ``after`` or
    ``before`` (a row's key); else the first. A key that names no row still finds its place.
    ``total``: how many ``jobs`` there are, when the caller counted them already."""
    jobs = placed(jobs)
    return _page(jobs, params, jobs.count() if total is None else total)


def _page(jobs, params, total: int) -> Page:
    focus, start_key = None, None
    at = whole_number(params.get("at"))
    if at is not None:
        row = jobs.filter(pk=at).values_list("place", "pk").first()
        if row is not None:
            focus, start_key = row[1], row
    before = None if start_key else parse(params.get("before"))
    after = None if start_key or before else parse(params.get("after"))
    if before is not None:
        rows = list(jobs.filter(_before(before)).reverse()[:PAGE_SIZE])[::-1]
    else:
        chosen = (
            jobs.filter(_after(start_key, inclusive=True)) if start_key
            else jobs.filter(_after(after)) if after else jobs
        )  # fmt: skip
        rows = list(chosen[:PAGE_SIZE])
    if not rows:
        if total:  # past either end: the nearest page there is
            return _page(jobs, {} if before is not None else {"before": LAST}, total)
        return Page([], 0, 0, False, False, None)
    first = start_key is None and before is None and after is None
    start = 0 if first else jobs.filter(_before((rows[0].place, rows[0].pk))).count()
    has_next = start + len(rows) < total
    return Page(rows, total, start, start > 0, has_next, focus)


def first_of(jobs):
    """The first job of ``jobs`` in queue order (a user's own: "where is my job"), or None."""
    return placed(jobs).first()
