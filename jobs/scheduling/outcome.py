"""A pass's outcome: its starts settled, then each job's reservation and the admissions.

What :meth:`core.Schedule.run` does once every job is booked: no search happens here, only
the bookings turned into what the queue, the forms and the admission write read.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING

from jobs.scheduling.booking import Booking
from jobs.scheduling.data import Admission, Placement, QueuedJob, Reservation
from jobs.scheduling.reasons import NotYetPlanned
from jobs.scheduling.rules import never_reason, wait_reason

if TYPE_CHECKING:
    from jobs.scheduling.core import Schedule


def settle(schedule: Schedule) -> None:
    """Make every reservation start now or when something ends on its nodes.

    A pass is due at every job end, so such a start is never missed. A reservation kept
    in compression (or found by a search cut short by its budget) may have lost the end
    it started at: a job ending there moved earlier. Nothing ends on its nodes between
    the last end before its start and its start, so from that end its windows hold no
    more than from its start: the same replicas fit there, earlier. Taken in start order,
    a move only loses an end later than its own start, still to be settled.
    """
    bookings, timelines = schedule.bookings, schedule.timelines
    starts = {job.id: bookings[job.id].start for job in schedule.order}
    later = [job for job in schedule.order if starts[job.id] is not None]
    for job in sorted(later, key=lambda job: starts[job.id]):
        if starts[job.id] == schedule.now:
            continue
        booking = bookings[job.id]
        nodes = {index for index, _ in booking.replicas}
        if not any(timelines[index].ends.get(booking.start) for index in nodes):
            schedule._remove(job, booking)
            booking.start = _last_end(schedule, booking)
            schedule._insert(job, booking)


def _last_end(schedule: Schedule, booking: Booking) -> float:
    """The last end (or now) on the booking's nodes at or before its start."""
    latest = schedule.now
    for index, _ in booking.replicas:
        tl = schedule.timelines[index]
        k = bisect_right(tl.times, booking.start) - 1
        while k and not tl.ends.get(tl.times[k]):
            k -= 1
        latest = max(latest, tl.times[k])
    return latest


def finish(schedule: Schedule) -> None:
    """Name each reservation's blockers, then make the reservations and admissions."""
    # Blockers found when a reservation was made may have left since (it was committed
    # in an earlier pass): name those ending at its start on its own nodes, else the
    # earlier ones still here.
    bookings, timelines, now = schedule.bookings, schedule.timelines, schedule.now
    live = {item.owner for _, item in schedule.running}
    live.update(job_id for job_id, b in bookings.items() if b.start is not None)
    for job in schedule.order:
        booking = bookings[job.id]
        start = booking.start
        if start is not None and start > now:
            own: set[int] = set()  # jobs ending at its start on its nodes
            for index, _ in booking.replicas:
                ending = timelines[index].ends.get(start)
                if ending:
                    own.update(ending)
            own.discard(job.id)
            kept = own or {owner for owner in booking.blockers if owner in live}
            booking.blockers = tuple(sorted(kept))
    for position, job in enumerate(schedule.order, 1):
        booking = bookings[job.id]
        if job.id in schedule.unplanned and position < schedule.first_unplanned:
            schedule.first_unplanned = position
        reservation = reservation_of(schedule, job, booking, position)
        schedule.reservations[job.id] = reservation
        if booking.start == schedule.now:
            spec_id = booking.alternative.spec_id
            schedule.admissions.append(Admission(job.id, spec_id, reservation.placements))
    schedule.reservations.update(held(schedule))


def held(schedule: Schedule) -> dict[int, Reservation]:
    """The jobs held for their team's maximum: after every planned job, in queue order,
    with no start (they are planned once their team has room)."""
    first = len(schedule.order) + 1
    return {
        job_id: Reservation(job_id, position, None, None, None, (), reason)
        for position, (job_id, reason) in enumerate(schedule.quota.held.items(), first)
    }


def reservation_of(
    schedule: Schedule, job: QueuedJob, booking: Booking, position: int
) -> Reservation:
    """The job's reservation at its queue position, from its booking."""
    if job.id in schedule.unplanned:
        return Reservation(job.id, position, None, None, None, (), NotYetPlanned(), ())
    if booking.start is None:
        reason = never_reason(schedule.infos, job)
        return Reservation(job.id, position, None, None, None, (), reason, ())
    demand, placements = booking.alternative.demand, booking.placements
    if placements is None:
        placements = tuple(
            Placement(schedule.infos[index].id, demand.cpu, demand.memory, slots)
            for index, slots in booking.replicas
        )
    starts_now = booking.start == schedule.now
    return Reservation(
        job_id=job.id,
        position=position,
        start=booking.start,
        end=booking.start + job.duration,
        spec_id=booking.alternative.spec_id,
        placements=placements,
        reason=None if starts_now else wait_reason(schedule, job, booking.alternative),
        blockers=booking.blockers,
    )
