"""A pass's first step: the last pass's reservations booked again as they were.

Each still valid one (its spec, nodes and slots still allowed) is booked where it was, in
queue order, while it fits beside everything booked before it; the first that does not
fit ends the kept ones (a replayed plan skips it instead: see ``Schedule.run``). A long
queue's reservations nearly always all fit, so they are first booked together, node by
node, each node's timeline made in one sweep (booked one by one, every booking split
lists a thousand entries long); only if something does not fit are they booked one by
one, which finds the first that does not. Both book the same (property-tested).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from math import inf
from typing import TYPE_CHECKING

from jobs.scheduling.booking import Booking, booked_items
from jobs.scheduling.data import QueuedJob, Reservation
from jobs.scheduling.node_fit import to_mask
from jobs.scheduling.profile import Profile
from jobs.scheduling.reasons import NotYetPlanned
from jobs.scheduling.settled import Digest, node_key
from jobs.scheduling.timeline import Item, Timeline
from jobs.scheduling.warm import EMPTY, install

if TYPE_CHECKING:
    from jobs.scheduling.core import Schedule


def recommit_all(
    schedule: Schedule,
    committed: Mapping[int, Reservation],
    replay: bool,
    previous: Digest | None = None,
) -> tuple[int, list[QueuedJob]]:
    """Book the committed reservations again: how many jobs at the head of the queue kept
    theirs or were deferred, and (replay) the jobs that did not, in queue order.
    ``previous``: the last pass's digest, whose settled bookings need no checking again
    (see :func:`as_settled`).

    A job with no promise that fair share put ahead of promised jobs of its own class (a
    team below its share submitted it since) is *deferred* (``schedule.deferred``): the
    walk goes on through its class, and it is searched for in its place beside every
    promise kept, so that no promise moves later for it (SPEC G3: the latest start stays a
    bound). A job of a higher class (a higher priority, a resubmission) still comes before
    the promises behind it: they are planned afresh, as SPEC Q2 and Q4 say."""
    held: list[tuple[int, QueuedJob, Booking]] = []  # (place in the queue, job, booking)
    unkept: list[QueuedJob] = []
    in_place: set[int] = set()  # kept as the carried profile holds them (see .warm.install)
    same, whole = unchanged_nodes(schedule, previous)
    walked, deferred_class, deferred = len(schedule.order), None, {}
    behind = None if replay else _promised_behind(schedule.order, committed)
    for place, job in enumerate(schedule.order):
        if deferred_class is not None and job_class(job) != deferred_class:
            walked = place  # past the class of a job come ahead by fair share alone
            break
        reservation = committed.get(job.id)
        booking = None
        if reservation is not None:
            booking = _kept(schedule, job, reservation, previous, same, whole, in_place)
        if booking is not None:
            held.append((place, job, booking))
        elif replay:
            # Searched for after every promise is booked again: in between, they would
            # take the room later promises hold and set off a cascade of searches.
            unkept.append(job)
        elif behind[place]:
            deferred[job.id] = place
            deferred_class = job_class(job)
        else:
            walked = place
            break
    if book_all(schedule, [(job, b) for _, job, b in held if b.start is not None], in_place):
        for _, job, booking in held:
            schedule.bookings[job.id] = booking
        schedule.deferred = set(deferred)
        return walked, unkept
    for place, job, booking in held:
        if booking.start is None:
            schedule.bookings[job.id] = booking
        elif not schedule._rebook(job, booking):
            if not replay:
                walked = place
                break
            unkept.append(job)
    if replay:
        unkept.sort(key=lambda job: job.queue_key)
    schedule.deferred = {job_id for job_id, place in deferred.items() if place < walked}
    return walked, unkept


def _kept(schedule, job, reservation, previous, same, whole, in_place: set[int]) -> Booking | None:
    """The booking a reservation stands for, if still valid (:func:`as_settled`, else
    :func:`held_booking`). A settled one still to start, in the profile the pass that
    settled it left (``schedule.as_left``), is there as it is: it joins ``in_place``."""
    booking = as_settled(schedule, job, reservation, previous, same, whole)
    if booking is None:
        return held_booking(schedule, job, reservation)
    if schedule.as_left and booking.start == reservation.start:
        in_place.add(job.id)
    return booking


def job_class(job: QueuedJob) -> tuple:
    """What puts a job ahead of promises made before it came (SPEC Q2): a higher priority,
    a resubmission after a fault. Within one class, fair share (SPEC G3) orders the jobs
    not yet promised a start, and never moves a promise later (see :func:`recommit_all`)."""
    return job.queue_key[:2]


def _promised_behind(order: list[QueuedJob], committed: Mapping[int, Reservation]) -> list:
    """For each place in the queue, whether a promised job of the same class comes after
    it: a job there with no promise of its own came ahead of it by fair share alone, and is
    searched for beside the promise, not before it. One sweep from the end."""
    found = [False] * len(order)
    seen, last_class = False, None
    for place in range(len(order) - 1, -1, -1):
        job = order[place]
        if job_class(job) != last_class:
            seen, last_class = False, job_class(job)
        found[place] = seen
        seen = seen or job.id in committed
    return found


def unchanged_nodes(schedule: Schedule, previous: Digest | None) -> tuple[frozenset[int], bool]:
    """The ids of the nodes the digest knew as they are now, and whether that is every node,
    in the same order: then a settled booking's replicas (by node index) are still its own."""
    if previous is None:
        return frozenset(), False
    known, ids = previous.nodes, [info.id for info in schedule.infos]
    same = frozenset(info.id for info in schedule.infos if known.get(info.id) == node_key(info))
    return same, len(same) == len(ids) == len(known) and list(known) == ids


def as_settled(
    schedule: Schedule,
    job: QueuedJob,
    held: Reservation,
    previous: Digest | None,
    same,
    whole: bool = False,
) -> Booking | None:
    """The booking of a reservation the last plan made and held settled, for the same job
    on the same nodes, which its rules still allow: valid as it was (only the plan's own
    checks made it), so its fit is not checked again. None if it is not such a one."""
    if previous is None or held.start is None or job.id not in previous.settled:
        return None
    alternative = next((a for a in job.alternatives if a.spec_id == held.spec_id), None)
    if alternative is None:
        return None
    placed = previous.placed.get(job.id) if whole else None
    if placed is not None and placed[0] is held.placements:
        # The very placements the last plan kept it from, on the same nodes: its replicas
        # and key are those it had (nothing to walk: it runs for every kept job of a long
        # queue), and as settled it was the same job, so its spec's demand is as checked.
        return _settled(schedule, job, held, previous, alternative, placed[1], placed[2][1])
    # One walk over its replicas (it runs for every kept job of a long queue): each on a
    # node as it was, holding what the spec asks.
    cpu, memory, by_id = alternative.demand.cpu, alternative.demand.memory, schedule.by_id
    at, replicas = [], []
    for placement in held.placements:
        node, slots = placement.node_id, tuple(placement.slots)
        if node not in same or placement.cpu != cpu or placement.memory != memory:
            return None
        at.append((node, slots))  # as booking_key has it
        replicas.append((by_id[node].index, slots))
    return _settled(schedule, job, held, previous, alternative, replicas, tuple(at))


def _settled(schedule, job, held, previous, alternative, replicas, at) -> Booking | None:
    start = max(held.start, schedule.now)
    if not previous.settled_as(job, (start, held.spec_id, at)):
        return None
    # Its nodes are as they were, but the job's rules may allow none of them now: a node it
    # names by name is gone, say (cached per rules and demand: a set lookup per replica).
    capable = schedule.capable_set(job, alternative)
    if any(index not in capable for index, _ in replicas):
        return None
    return Booking(start, alternative, replicas, held.blockers, held.placements, (held.spec_id, at))


def held_booking(schedule: Schedule, job: QueuedJob, held: Reservation) -> Booking | None:
    """The booking a previous reservation stands for, if it is still valid (its fit beside
    the others aside); None if not."""
    if isinstance(held.reason, NotYetPlanned):  # no promise: planned afresh, in its turn
        return None
    if held.start is None:
        # Kept only while the job still cannot start: then it holds nothing. Whether a job
        # can ever start does not depend on what is booked (everything ends).
        if schedule._best(job, schedule.profile, inf) is None:
            return Booking(None, None, [])
        return None
    alternative = next((a for a in job.alternatives if a.spec_id == held.spec_id), None)
    if alternative is None or not (
        alternative.min_nodes <= len(held.placements) <= alternative.nodes
    ):
        return None
    demand, capable = alternative.demand, schedule.capable_set(job, alternative)
    start = max(held.start, schedule.now)  # a pass that came late cannot start it earlier
    replicas = []
    for placement in held.placements:
        info = schedule.by_id.get(placement.node_id)
        mask = to_mask(placement.slots)
        if (
            info is None
            or info.index not in capable
            or (placement.cpu, placement.memory) != (demand.cpu, demand.memory)
            or not info.shaped_for(demand, mask, len(placement.slots))
        ):
            return None
        replicas.append((info.index, tuple(placement.slots)))
    return Booking(start, alternative, replicas, held.blockers, held.placements)


def book_all(
    schedule: Schedule, held: list[tuple[QueuedJob, Booking]], in_place: AbstractSet[int] = EMPTY
) -> bool:
    """Book these kept reservations beside the running jobs if they all fit; else book
    none of them and say so. A schedule started from an earlier pass's profile (see
    jobs.scheduling.warm) has only gathered its running jobs (``holding``): that profile is
    brought to hold exactly them and these (of which ``in_place`` it holds as they are),
    else made afresh after all."""
    if schedule.holding is not None:
        holding, schedule.holding = schedule.holding, None
        if install(schedule.profile, holding, held, in_place):
            return True
        schedule.profile = Profile(schedule.infos, schedule.now)  # carried in vain
        schedule.timelines = schedule.profile.timelines
        for index, key, item in holding:
            schedule.profile.add(index, key, item)
    return book_together(schedule, held)


def book_together(schedule: Schedule, held: list[tuple[QueuedJob, Booking]]) -> bool:
    """Book all of these at once if each fits beside all the others and what the profile
    holds already; else book nothing and say so."""
    per_node: dict[int, list[tuple[tuple[int, int], Item]]] = {}
    for job, booking in held:
        for index, key, item in booked_items(job, booking):
            per_node.setdefault(index, []).append((key, item))
    timelines = schedule.timelines
    made = {}
    for index, items in per_node.items():
        segments = _swept(timelines[index], items)
        if segments is None:
            return False
        made[index] = segments
    for index, segments in made.items():
        timelines[index].install(*segments, per_node[index])
        schedule.profile.changes.append(index)
    return True


def _swept(tl: Timeline, items: list[tuple[object, Item]]):
    """The timeline's segments with these items added, or None where one would not fit."""
    old_times = tl.times
    times = sorted({*old_times, *(item.start for _, item in items),
                    *(item.end for _, item in items)})  # fmt: skip
    cpu, mem, mask = [], [], []
    j, last = 0, len(old_times) - 1
    for t in times:
        while j < last and old_times[j + 1] <= t:
            j += 1
        cpu.append(tl.cpu[j])
        mem.append(tl.mem[j])
        mask.append(tl.mask[j])
    at = {t: i for i, t in enumerate(times)}
    info = tl.info
    cpu_total, mem_total = info.cpu_total, info.mem_total
    for _, item in items:
        for s in range(at[item.start], at[item.end]):
            if mask[s] & item.mask:
                return None
            cpu[s] += item.cpu
            mem[s] += item.mem
            if cpu[s] > cpu_total or mem[s] > mem_total:
                return None
            mask[s] |= item.mask
    return times, cpu, mem, mask
