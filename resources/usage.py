"""Usage from the ledger (SPEC G4): board-hours, CPU core-hours and memory GiB-hours held,
by project, member or pool, per day, week or month.

Each allocation row is an interval (``created_at`` to ``released_at``, still open while
held) with who held it and where (:class:`resources.models.Allocation`). Usage over a
period is each interval clipped to it, times what it held, summed in the database: one
statement whatever the number of rows. An open interval counts up to ``now``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db import connection
from django.utils import timezone

# What usage may be grouped by: the ledger's own columns, never text from the caller.
BY = {"project": "a.project_id", "owner": "a.owner_id", "pool": "a.pool_id"}
# Buckets of time: PostgreSQL's date_trunc units and their length.
UNITS = {"day": "1 day", "week": "1 week", "month": "1 month"}
# What is summed, per hour held: boards, CPU cores, memory GiB.
MEASURES = ("board_hours", "cpu_hours", "memory_gib_hours")


@dataclass(frozen=True)
class Used:
    """What one holder (a project, member or pool id; None: not recorded, or a shared node
    for pools) used in one bucket (its start; None when not bucketed)."""

    bucket: datetime | None
    key: int | None
    board_hours: Decimal
    cpu_hours: Decimal
    memory_gib_hours: Decimal


def usage_in(
    start: datetime, end: datetime, *, by: str = "project", unit: str | None = None,
    now: datetime | None = None, projects: list[int] | None = None, owner: int | None = None,
) -> list[Used]:  # fmt: skip
    """Boards, cores and memory held in ``[start, end)``, in hours, by ``by`` (a key of
    :data:`BY`), per ``unit`` (a key of :data:`UNITS`, buckets in the database's time zone)
    or over the whole period; only ``projects``' allocations when given, only ``owner``'s
    when given. Ordered by bucket, then most board-hours first (then CPU core-hours)."""
    if by not in BY:
        raise ValueError(f"usage is grouped by one of {', '.join(BY)}, not {by!r}")
    if unit is not None and unit not in UNITS:
        raise ValueError(f"usage is bucketed by one of {', '.join(UNITS)}, not {unit!r}")
    if end <= start:
        return []
    params: dict[str, object] = {"start": start, "end": end, "now": now or timezone.now()}
    if unit is None:
        buckets = "(SELECT %(start)s::timestamptz AS at, %(end)s::timestamptz AS until) AS b"
    else:
        params |= {"unit": unit, "step": UNITS[unit]}
        buckets = """(
            SELECT at, at + %(step)s::interval AS until
            FROM generate_series(date_trunc(%(unit)s, %(start)s::timestamptz),
                                 %(end)s::timestamptz, %(step)s::interval) AS g(at)
            WHERE at < %(end)s
        ) AS b"""
    only = ""
    if projects is not None:
        only = "AND a.project_id = ANY(%(projects)s)"
        params["projects"] = list(projects)
    if owner is not None:
        only += " AND a.owner_id = %(owner)s"
        params["owner"] = owner
    key = BY[by]
    # Clipped to the bucket and to the period; an interval still open ends now.
    hours = """extract(epoch FROM least(coalesce(a.released_at, %(now)s), b.until, %(end)s)
                               - greatest(a.created_at, b.at, %(start)s)) / 3600"""
    sql = f"""
        SELECT b.at, {key}, sum(a.boards * {hours}), sum(a.cpu_millicores / 1000.0 * {hours}),
               sum(a.memory_mib / 1024.0 * {hours})
        FROM {buckets}
        JOIN resources_allocation AS a
          ON a.created_at < least(b.until, %(end)s)
         AND coalesce(a.released_at, %(now)s) > greatest(b.at, %(start)s)
        WHERE coalesce(a.released_at, %(now)s) > a.created_at {only}
        GROUP BY b.at, {key}
        ORDER BY b.at, 3 DESC, 4 DESC, {key}
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    thousandth = Decimal("0.001")
    return [
        Used(at if unit else None, holder, *(Decimal(v).quantize(thousandth) for v in values))
        for at, holder, *values in rows
    ]


def bucket_starts(start: datetime, end: datetime, unit: str) -> list[datetime]:
    """The start of every bucket of ``unit`` that ``[start, end)`` touches, as the database
    truncates them (days at midnight, weeks on Monday, months on the 1st, in ``start``'s
    time zone): the chart's axis, empty buckets included."""
    at = start.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "week":
        at -= timedelta(days=at.weekday())
    elif unit == "month":
        at = at.replace(day=1)
    starts = []
    while at < end:
        starts.append(at)
        if unit == "month":
            at = (at.replace(day=28) + timedelta(days=4)).replace(day=1)
        else:
            at += timedelta(days=7 if unit == "week" else 1)
    return starts
