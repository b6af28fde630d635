"""Where a pass plans a job: its booking (core.Schedule keeps one per queued job)."""

from __future__ import annotations

from dataclasses import dataclass

from jobs.scheduling.data import Alternative


@dataclass(slots=True)
class Booking:
    """Where a job is planned in this pass: start, spec and (node index, slots) replicas."""

    start: float | None
    alternative: Alternative | None
    replicas: list[tuple[int, tuple[int, ...]]]
    blockers: tuple[int, ...] = ()
