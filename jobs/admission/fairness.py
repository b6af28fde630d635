"""Each project's fair-share standing (SPEC G3, the rule is jobs.scheduling.fairness'): its
decayed use of boards, read from the ledger in one query, over its share by weight."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Max

from console import limits
from jobs.scheduling.fairness import GRACE, rank, standing
from resources.models import Quota

# Use older than this many half-lives weighs under 0.4%: the ledger is read no further back.
HORIZON_HALF_LIVES = 8

# The decayed board-seconds of every allocation (jobs and development environments alike)
# per project: boards x the integral of 2^-(age / half-life) over the time it was held.
USE = """
    SELECT project_id, SUM(
        boards::float8 * (
            EXP(-%(rate)s * EXTRACT(EPOCH FROM (%(now)s - LEAST(COALESCE(released_at, %(now)s),
                                                               %(now)s))))
            - EXP(-%(rate)s * EXTRACT(EPOCH FROM (%(now)s - created_at)))
        ) / %(rate)s
    )
    FROM resources_allocation
    WHERE project_id IS NOT NULL AND boards > 0
      AND (released_at IS NULL OR released_at >= %(since)s)
    GROUP BY project_id
"""


def half_life_seconds() -> float:
    """The admin's half-life; 0 when fair share is off."""
    return limits.current().fair_share_half_life_days * 86400.0


def decayed_use(now: datetime, half_life: float) -> dict[int, float]:
    rate = math.log(2) / half_life
    since = now - timedelta(seconds=half_life * HORIZON_HALF_LIVES)
    with connection.cursor() as cursor:
        cursor.execute(USE, {"rate": rate, "now": now, "since": since})
        return {project: max(0.0, value or 0.0) for project, value in cursor.fetchall()}


def weights() -> dict[int, float]:
    """Each project's fair-share weight: the highest of its quotas' (1 without one)."""
    rows = Quota.objects.filter(project__isnull=False).values("project").annotate(w=Max("weight"))
    return {row["project"]: float(row["w"]) for row in rows.order_by()}


def standings(now: datetime) -> dict[int, float]:
    """Each project's standing (lower: further below its share, its jobs first); {} when
    fair share is off or nobody has used a board in the window."""
    half_life = half_life_seconds()
    if half_life <= 0:
        return {}
    used = decayed_use(now, half_life)
    if not used:
        return {}
    return rank(standing(used, weights(), GRACE))
