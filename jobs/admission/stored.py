"""A waiting job's stored standing as JSON and back: the reservation a pass is held to, and
what a read of the queue decodes again only where the stored text changed
(jobs.admission.state._queue)."""

from __future__ import annotations

import json

from jobs.scheduling.data import Placement, Reservation


def decode(text: str | None, last: dict, decoded: dict):
    """A wait detail's JSON (a long queue has a handful of distinct ones, shared)."""
    if text is None:
        return None
    found = decoded.get(text) or last.get(text)
    if found is None:
        found = json.loads(text)
    decoded[text] = found
    return found


def stored(job_id: int, text: str | None, last: dict, decoded: dict):
    """A stored reservation as read (its JSON) and as the pass is held to it, or Nones."""
    if text is None:
        return None, None
    key = (job_id, text)
    found = last.get(key)
    if found is None:
        data = json.loads(text)
        found = (data, reservation_from_json(job_id, data) if data else None)
    decoded[key] = found
    return found


def reservation_to_json(reservation: Reservation) -> dict:
    return {
        "start": reservation.start,
        "end": reservation.end,
        "spec": reservation.spec_id,
        "placements": [[p.node_id, p.cpu, p.memory, list(p.slots)] for p in reservation.placements],
        "blockers": list(reservation.blockers),
        "position": reservation.position,
    }


def reservation_from_json(job_id: int, data: dict) -> Reservation:
    return Reservation(
        job_id=job_id,
        position=data.get("position", 0),
        start=data.get("start"),
        end=data.get("end"),
        spec_id=data.get("spec"),
        placements=tuple(Placement(n, c, m, tuple(s)) for n, c, m, s in data.get("placements", [])),
        reason=None,
        blockers=tuple(data.get("blockers", ())),
    )
