"""Which kept reservations a pass need not search again: the room given back since.

A pass given the last one's reservations lifts each out and searches for an earlier start
(``core.Schedule._compress``). That search finds one only if room came back, since the
job was last searched, where the job could use it: on a node one of its specs may use,
before its start plus its duration. Everything else in the profile only took room. So a
pass logs the room each removal gives back (``Profile.freed``) and ends by noting which
jobs' starts were still the earliest possible (:class:`Digest`: their last search was
exact and nothing since gave room back within their reach). The next pass, given that
note, first logs the room the last plan held that its own does not (a job ended early or
left the queue, a node came back or changed: all of its time counts), then lifts out and
searches only the jobs whose reach that log touches. The others would have kept their
booking anyway: the plan is the same, search or not (property-tested), and a pass over a
long queue where nothing changed costs its re-booking, not a search per job.

Any earlier plan serves as the note, even one another process's pass came after: it is
only ever compared with what this pass actually holds.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, fields
from math import inf
from operator import attrgetter
from typing import TYPE_CHECKING, TypeVar

from jobs.scheduling.booking import Booking
from jobs.scheduling.data import QueuedJob
from jobs.scheduling.node_fit import NodeInfo
from jobs.scheduling.profile import Item, demand_key
from jobs.scheduling.rules import rule_key

if TYPE_CHECKING:
    from jobs.scheduling.core import Schedule

T = TypeVar("T")

# A queued job's fields but its fair-share standing (see Digest.settled_as).
_all_but_fair = attrgetter(*(f.name for f in fields(QueuedJob) if f.name != "fair"))

# Entries of the log one job's reach is checked against at most: past them it counts as
# reached (searched again), so that after a large change (a queue's worth of room given
# back) a pass does not check every job against all of it.
REACH_LIMIT = 256
# The log's entries on a group's nodes are kept in blocks of this many, each with its
# earliest start: a block that starts at or after a job's reach is passed over whole.
BLOCK = 64


def node_key(info: NodeInfo) -> tuple:
    """Everything about a node a search or a rule reads, but its bookings."""
    return (info.name, info.kind, info.pool, info.driver, info.base_cpu, info.base_mem,
            info.base_mask)  # fmt: skip


@dataclass(frozen=True)
class Digest:
    """What a pass leaves the next one: its moment, its nodes, every node's items (running
    jobs and bookings, by node id) and its settled jobs with their bookings."""

    now: float
    nodes: dict[int, tuple]  # node id -> node_key
    items: dict[int, dict[object, Item]]  # node id -> (owner, replica) -> item
    settled: dict[int, tuple[QueuedJob, tuple]]  # job id -> (job, booking_key)

    def settled_as(self, job: QueuedJob, key: tuple) -> bool:
        """Whether this plan held ``job``, as it is, settled and booked as ``key``.

        Its team's fair-share standing (SPEC G3) aside: it moves a little with every pass
        while anyone's jobs run, and it only orders the queue; a kept job's search reads
        the profile and the job's own specs and rules. Compared whole, every standing that
        moved made every job of the queue unsettled: a pass over 10,000 queued searched
        its 1,000 again each time, and never was the quiet one."""
        held = self.settled.get(job.id)
        if held is None or held[1] != key:
            return False
        was = held[0]
        return was == job or _all_but_fair(was) == _all_but_fair(job)


def booking_key(schedule: Schedule, booking: Booking) -> tuple:
    """A booking by what outlives the pass: (start, spec, ((node id, slots), ...))."""
    where = booking.where
    if where is None:
        infos = schedule.infos
        replicas = tuple((infos[index].id, slots) for index, slots in booking.replicas)
        where = booking.where = (booking.alternative.spec_id, replicas)
    return (booking.start, *where)


class Starts:
    """The starts of a group's log entries, to count those before a moment: sorted, but for
    the last few added (a pass adds tens of thousands at once after an urgent submit, then a
    few per move; one by one into a sorted list, those cost a second)."""

    __slots__ = ("pending", "sorted")

    def __init__(self):
        self.sorted: list[float] = []
        self.pending: list[float] = []

    def add(self, start: float) -> None:
        self.pending.append(start)

    def before(self, moment: float) -> int:
        pending = self.pending
        if len(pending) > 64:
            self.sorted.extend(pending)
            self.sorted.sort()  # a sorted run and the new ones: Timsort merges them
            pending.clear()
        return bisect_left(self.sorted, moment) + sum(1 for start in pending if start < moment)


class Tracker:
    """One pass's account of what its searches knew: which jobs may skip their search,
    and which are settled at the end."""

    def __init__(self, schedule: Schedule, previous: Digest | None):
        self.schedule = schedule
        self.previous = previous if previous and previous.now <= schedule.now else None
        self.log: list[tuple[int, float, float]] = []  # (node index, start, end) given back
        self.marks: dict[int, int] = {}  # job id -> log position of its last exact search
        self._read = 0  # log entries sorted into _by_node and _live so far
        self._by_node: dict[int, list[tuple[int, float]]] = {}  # index -> (position, start)
        # group -> [log position read, entries, earliest start of each BLOCK of them]
        self._live: dict[tuple, list] = {}

    def begin(self) -> None:
        """The pass's holdings and re-booked reservations are in: from now on, log what the
        profile gives back, starting with what the last plan held and this one does not."""
        self.schedule.profile.freed = self.log
        if self.previous is not None:
            self.log.extend(given_back(self.previous, self.schedule))

    def search(self, job: QueuedJob, search: Callable[[], T]) -> T:
        """Run a search for ``job`` (lifted out of the profile): its start is the earliest
        unless the budget cut it short."""
        profile, position = self.schedule.profile, len(self.log)
        cut = profile.cut_short
        found = search()
        if profile.cut_short == cut:
            self.marks[job.id] = position
        else:
            self.marks.pop(job.id, None)
        return found

    def undo(self, position: int, job: QueuedJob) -> None:
        """``job``, lifted out at ``position`` of the log, was booked again as it was: what
        it gave back is no more, and its search counts from there (room given back after
        it takes the positions its own had)."""
        read = [self._read, *(live[0] for live in self._live.values())]
        assert max(read) <= position, "room given back was read before it was undone"
        del self.log[position:]
        if self.marks.get(job.id, -1) > position:
            self.marks[job.id] = position

    def unmoved(self, job: QueuedJob, booking: Booking) -> bool:
        """Whether a search for this re-booked job would keep its booking: it was settled
        in the last plan, as it is now, and no room came back within its reach since."""
        previous = self.previous
        if previous is None or not previous.settled_as(job, booking_key(self.schedule, booking)):
            return False
        if self._reached(job, booking, 0):
            return False
        self.marks[job.id] = len(self.log)
        return True

    def _reached(self, job: QueuedJob, booking: Booking, since: int) -> bool:
        """Whether room given back from log position ``since`` on could let the job start
        before its booking: on a node it holds (lifted out, its own room joins it), or where
        a run of room for one replica of one of its specs overlaps it, starts before the
        booking and lasts the job's duration. Past REACH_LIMIT entries looked at, it may."""
        if since >= len(self.log):
            return False
        self._sort_in()
        start, duration = booking.start, job.duration
        reach, looked = start + duration, 0
        for index, _ in booking.replicas:
            entries = self._by_node.get(index, ())
            for k in range(bisect_left(entries, (since,)), len(entries)):
                looked += 1
                if entries[k][1] < reach or looked > REACH_LIMIT:
                    return True
        groups = [(group, *self._entries(group, nodes)) for group, nodes in self._groups(job)]
        # Every entry given back before its reach is one the walk below looks at, each
        # group's in turn, until a run of room lets the job start earlier or it has looked
        # at REACH_LIMIT: with more than that it may, whatever the runs say. (A deep job
        # after a large change: such a pass went mostly in looking at them one by one.)
        if since == 0 and looked + sum(g[3].before(reach) for g in groups) > REACH_LIMIT:
            return True
        now, timelines = self.schedule.now, self.schedule.timelines
        for group, entries, earliest, _ in groups:
            demand, key = group[1], demand_key(group[1])
            k, count = bisect_left(entries, (since,)), len(entries)
            while k < count:
                block = k // BLOCK
                end = min((block + 1) * BLOCK, count)
                if earliest[block] >= reach:  # none of the block is within reach
                    k = end
                    continue
                for _, index, given, until in entries[k:end]:
                    if given >= reach:
                        continue
                    looked += 1
                    if looked > REACH_LIMIT:
                        return True
                    for run_start, run_end in timelines[index].runs_over(demand, key, given, until):
                        begin = max(run_start, now)
                        if begin < start and run_end - begin >= duration:
                            return True
                k = end
        return False

    def _sort_in(self) -> None:
        log = self.log
        for position in range(self._read, len(log)):
            index, given, _ = log[position]
            self._by_node.setdefault(index, []).append((position, given))
        self._read = len(log)

    def _entries(self, group: tuple, nodes: frozenset[int]) -> tuple[list, list, Starts]:
        """The log's entries on the group's nodes in log order, as (position, node index,
        start, end), the earliest start of each BLOCK of them, and all their starts in
        order: those read since its last question are added."""
        live = self._live.get(group)
        if live is None:
            live = self._live[group] = [0, [], [], Starts()]
        read, entries, earliest, starts = live
        log = self.log
        for position in range(read, len(log)):
            index, given, until = log[position]
            if index in nodes:
                if len(entries) % BLOCK == 0:
                    earliest.append(given)
                elif given < earliest[-1]:
                    earliest[-1] = given
                entries.append((position, index, given, until))
                starts.add(given)
        live[0] = len(log)
        return entries, earliest, starts

    def _groups(self, job: QueuedJob):
        """The job's specs' nodes, as ((rules, demand), node indices)."""
        schedule, rules = self.schedule, rule_key(job)
        for alternative in job.alternatives:
            yield (rules, alternative.demand), schedule.capable_set(job, alternative)

    def digest(self) -> Digest:
        """The note for the next pass (after the pass's last move)."""
        schedule = self.schedule
        now, settled = schedule.now, {}
        for job in schedule.order:
            position = self.marks.get(job.id)
            booking = schedule.bookings[job.id]
            if position is None or booking.start is None or booking.start == now:
                continue
            if not self._reached(job, booking, position):
                settled[job.id] = (job, booking_key(schedule, booking))
        schedule.profile.freed = None
        return Digest(
            now,
            {info.id: node_key(info) for info in schedule.infos},
            {tl.info.id: dict(tl.items) for tl in schedule.timelines},
            settled,
        )


def given_back(previous: Digest, schedule: Schedule) -> list[tuple[int, float, float]]:
    """Room the last plan held that this pass's profile does not, as ``(node index, start,
    end)``: items gone or shrunk, and the whole of every node new or changed since."""
    now, freed = schedule.now, []
    for info in schedule.infos:
        if previous.nodes.get(info.id) != node_key(info):
            freed.append((info.index, now, inf))
    for node_id, items in previous.items.items():
        info = schedule.by_id.get(node_id)
        if info is None or previous.nodes[node_id] != node_key(info):
            continue  # gone (no room there) or counted whole above
        held = schedule.timelines[info.index].items
        if held == items:
            continue
        for key, old in items.items():
            if old.end <= now:
                continue
            new = held.get(key)
            # Most are the same item (a kept reservation): equal tuples compare in C.
            if new is None or (new != old and not _covers(new, old, now)):
                freed.append((info.index, old.start, old.end))
    return freed


def _covers(new: Item, old: Item, now: float) -> bool:
    """Whether ``new`` takes at least the room ``old`` took from ``now`` on (a job that was
    booked to start and now runs, a running job's end pushed later)."""
    return (
        new.start <= max(old.start, now)
        and new.end >= old.end
        and new.cpu >= old.cpu
        and new.mem >= old.mem
        and new.mask & old.mask == old.mask
    )


class NoTracker:
    """Where nothing is tracked (a replayed plan, a prediction's searches): every search
    runs, none is spared."""

    def search(self, job: QueuedJob, search: Callable[[], T]) -> T:
        return search()

    def unmoved(self, job: QueuedJob, booking: Booking) -> bool:
        return False

    def undo(self, position: int, job: QueuedJob) -> None:
        pass


NO_TRACKER = NoTracker()
