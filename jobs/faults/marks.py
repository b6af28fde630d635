"""One key of a running attempt's watch (``Attempt.watch``), set once: the log watch, elastic
growth and the idle watch each keep their own key there, and update it concurrently."""

from __future__ import annotations

import json

from django.db import connection

from jobs.models import Attempt


def mark_once(attempt_id: int, key: str, value) -> bool:
    """Set ``key`` to ``value`` unless the attempt's watch has it; True when this call set
    it. Only that key is written, in one statement."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {Attempt._meta.db_table}
            SET watch = COALESCE(watch, '{{}}'::jsonb) || %s::jsonb
            WHERE id = %s AND NOT COALESCE(watch, '{{}}'::jsonb) ? %s
            """,
            [json.dumps({key: value}), attempt_id, key],
        )
        return cursor.rowcount == 1
