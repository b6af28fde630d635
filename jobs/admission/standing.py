"""A pass's decisions on the jobs still waiting: each one's standing in the queue (its
position, latest start, reason, blockers and reservation: SPEC Q5, J24), written where it
changed."""

from __future__ import annotations

import json

from django.db import connection, transaction

from jobs.admission.state import State, moment
from jobs.admission.stored import reservation_to_json
from jobs.admission.words import Names, say, to_json
from jobs.scheduling.data import Reservation

# The standing of the waiting jobs whose standing changed beyond their position, in one
# statement (with MOVE, in one transaction, whose id it returns with how many jobs it
# changed). Each queued job has its standing row (migration 0022's triggers); a job that
# left the queue since the pass read it has none, and is left alone.
RECORD = """
    WITH changed AS (
        UPDATE jobs_standing AS s SET
            position = v.position,
            latest_start = v.start,
            reason = v.reason,
            detail = v.detail,
            blockers = v.blockers,
            reservation = v.stored
        FROM (
            SELECT id, position, start, reason, detail, stored,
                   ARRAY(SELECT jsonb_array_elements_text(blocking)::bigint) AS blockers
            FROM unnest(%s::bigint[], %s::integer[], %s::timestamptz[], %s::text[],
                        %s::jsonb[], %s::jsonb[], %s::jsonb[])
                 AS u(id, position, start, reason, detail, blocking, stored)
        ) AS v
        WHERE s.job_id = v.id
          AND (s.position, s.latest_start, s.reason, s.detail, s.blockers, s.reservation)
              IS DISTINCT FROM (v.position, v.start, v.reason, v.detail, v.blockers, v.stored)
        RETURNING 1
    )
    SELECT count(*), pg_current_xact_id_if_assigned()::text FROM changed
"""

# The jobs that only moved in the queue: their new positions.
MOVE = """
    WITH changed AS (
        UPDATE jobs_standing AS s SET position = v.position
        FROM unnest(%s::bigint[], %s::integer[]) AS v(id, position)
        WHERE s.job_id = v.id AND s.position IS DISTINCT FROM v.position
        RETURNING 1
    )
    SELECT count(*), pg_current_xact_id_if_assigned()::text FROM changed
"""


def record(
    reservations: dict[int, Reservation], state: State, admitted: list[int], own: list[str]
) -> int:
    """Write each queued job's position, latest start, reason, blockers and reservation.

    Only the jobs whose standing differs from what the state read (``State.recorded``) are
    sent, in one UPDATE ... FROM unnest(...) (row-by-row updates would cost more than the
    pass itself), and those that only moved in the queue as their positions alone; each
    again touches only the rows that differ: a pass that changes
    nothing writes nothing. A standing is no change of what the queue is planned from (its
    table logs none, migration 0022), so writing one never makes the form's prediction plan
    the queue again. Only passes write a standing, one at a time, so what the state read is
    what is there. Returns how many jobs it changed.
    """
    done = set(admitted)
    names = Names()
    # Positions among the jobs still waiting: the admitted ones have left the queue.
    waiting = sorted(
        (r for job_id, r in reservations.items() if job_id not in done),
        key=lambda r: r.position,
    )
    sent: list[tuple] = []  # the rows that differ, as RECORD's arrays take them
    moved: list[tuple[int, int]] = []  # the rows whose position alone differs
    worded: dict = {}
    for position, reservation in enumerate(waiting, start=1):
        start = moment(reservation.start)
        text, detail, detail_json = _worded(reservation.reason, names, worded)
        blocking = list(reservation.blockers)
        # The reservation is stored without its place in the queue, which is a column of
        # its own: every admission moves the jobs behind it, and a job that only moved up is
        # written one number, not its whole reservation again.
        was = state.recorded.get(reservation.job_id)
        kept = _stored(reservation, state.committed.get(reservation.job_id), was)
        # In the order of state.STANDING_FIELDS, as State.recorded holds it.
        standing = (position, start, text, detail, blocking, kept)
        if was == standing:
            continue
        if was is not None and was[1:] == standing[1:]:
            moved.append((reservation.job_id, position))
            continue
        stored = None if kept is None else json.dumps(kept)
        sent.append((reservation.job_id, position, start, text, detail_json,
                     json.dumps(blocking), stored))  # fmt: skip
    if not sent and not moved:
        return 0
    changed, xid = 0, None
    with transaction.atomic(), connection.cursor() as cursor:
        for statement, rows in ((RECORD, sent), (MOVE, moved)):
            if rows:
                cursor.execute(statement, [list(column) for column in zip(*rows, strict=True)])
                count, xid = cursor.fetchone()
                changed += count
    if changed:
        own.append(xid)
    return changed


def _stored(reservation: Reservation, held: Reservation | None, was: tuple | None):
    """The reservation as stored (JSON). A kept one (its booking reuses the placements the
    stored one was read with) is the JSON read, where nothing else in it changed: making it
    again for every job of a long queue was a tenth of a pass that changed nothing."""
    if reservation.start is None:
        return None
    if (
        held is not None
        and was is not None
        and reservation.placements is held.placements
        and reservation.start == held.start
        and reservation.end == held.end
        and reservation.spec_id == held.spec_id
        and reservation.blockers == held.blockers
    ):
        return was[-1]
    return reservation_to_json(reservation)


def _worded(reason, names: Names, memo: dict) -> tuple[str, object, str]:
    """A reason's stored text, its detail and that detail as JSON. A long queue has a
    handful of distinct reasons (four at 10,000 queued): each is worded once a pass."""
    try:
        return memo[reason]
    except KeyError:
        pass
    except TypeError:  # a reason holding something unhashable: worded each time
        return _word(reason, names)
    memo[reason] = found = _word(reason, names)
    return found


def _word(reason, names: Names) -> tuple[str, object, str]:
    detail = json.dumps(to_json(reason))
    # The detail as it reads back from the database (lists, not tuples): compared with it.
    return (say(reason, names)[:500] if reason else "", json.loads(detail), detail)
