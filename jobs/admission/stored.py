"""A waiting job's stored standing as JSON and back: the reservation a pass is held to, and
what a read of the queue decodes again only where the stored text changed
(jobs.admission.queue_read)."""

from __future__ import annotations

import json
from dataclasses import replace

from jobs.scheduling.data import Placement, Reservation

# The standings' JSON as the last read of the queue decoded it, by its stored text: from one
# pass to the next most of a long queue's standings are unchanged, and decoding them all
# again (and making each stored reservation again) was half of reading the state (0.3 s at
# 10,000 queued). Only what the last read saw is kept; what is decoded is never changed.
_last: dict = {}


class Reading:
    """One read of the queue's standings: each JSON text decoded at most once, reusing what
    the last read decoded; :meth:`keep` makes this read's the ones the next read reuses."""

    def __init__(self):
        self.last, self.decoded = _last, {}

    def detail(self, text: str | None):
        """A wait detail's JSON (a long queue has a handful of distinct ones, shared)."""
        if text is None:
            return None
        found = self.decoded.get(text) or self.last.get(text)
        if found is None:
            found = json.loads(text)
        self.decoded[text] = found
        return found

    def reservation(
        self, job_id: int, text: str | None, position: int | None
    ) -> tuple[dict | None, Reservation | None]:
        """A stored reservation as read (its JSON) and as the pass is held to it at the
        job's ``position`` (a column of its own: a move in the queue leaves the JSON as it
        is), or Nones."""
        if text is None:
            return None, None
        key = (job_id, text)
        found = self.last.get(key)
        if found is None:
            data = json.loads(text)
            found = (data, reservation_from_json(job_id, data, position or 0) if data else None)
        elif found[1] is not None and found[1].position != position:
            found = (found[0], replace(found[1], position=position or 0))
        self.decoded[key] = found
        return found

    def keep(self) -> None:
        global _last
        _last = self.decoded


def reservation_to_json(reservation: Reservation) -> dict:
    return {
        "start": reservation.start,
        "end": reservation.end,
        "spec": reservation.spec_id,
        "placements": [[p.node_id, p.cpu, p.memory, list(p.slots)] for p in reservation.placements],
        "blockers": list(reservation.blockers),
    }


def reservation_from_json(job_id: int, data: dict, position: int) -> Reservation:
    return Reservation(
        job_id=job_id,
        position=position,
        start=data.get("start"),
        end=data.get("end"),
        spec_id=data.get("spec"),
        placements=tuple(Placement(n, c, m, tuple(s)) for n, c, m, s in data.get("placements", [])),
        reason=None,
        blockers=tuple(data.get("blockers", ())),
    )
