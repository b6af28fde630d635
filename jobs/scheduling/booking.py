"""Where a pass plans a job: its booking (core.Schedule keeps one per queued job)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from jobs.scheduling.data import Alternative, QueuedJob
from jobs.scheduling.node_fit import to_mask
from jobs.scheduling.timeline import Item


@dataclass(slots=True)
class Booking:
    """Where a job is planned in this pass: start, spec and (node index, slots) replicas."""

    start: float | None
    alternative: Alternative | None
    replicas: list[tuple[int, tuple[int, ...]]]
    blockers: tuple[int, ...] = ()
    # The placements of the reservation it was kept from, which its replicas are (a pass
    # re-books a long queue's reservations: made again, they were a tenth of its time).
    placements: tuple | None = None
    # Its spec and replicas by node id (settled.booking_key), once worked out: they never
    # change, its start may (outcome.settle).
    where: tuple | None = None

    def __getstate__(self) -> tuple:
        # Stored with the plan (jobs.admission.plans) without the two caches, worked out
        # again when asked for: they were a third of a long queue's stored plan.
        return self.start, self.alternative, self.replicas, self.blockers

    def __setstate__(self, state: tuple) -> None:
        self.start, self.alternative, self.replicas, self.blockers = state
        self.placements = self.where = None


def booked_items(job: QueuedJob, booking: Booking) -> Iterator[tuple[int, tuple[int, int], Item]]:
    """Each replica of the job's booking as the profile holds it: (node index, key, item)."""
    demand, start = booking.alternative.demand, booking.start
    end = start + job.duration
    for k, (index, slots) in enumerate(booking.replicas):
        yield (
            index,
            (job.id, k),
            Item(start, end, demand.cpu, demand.memory, to_mask(slots), job.id),
        )
