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
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, TypeVar

from jobs.scheduling.booking import Booking
from jobs.scheduling.data import QueuedJob
from jobs.scheduling.node_fit import NodeInfo
from jobs.scheduling.profile import demand_key
from jobs.scheduling.reach_counts import Aged, Starts
from jobs.scheduling.rules import rule_key
from jobs.scheduling.timeline import Item

if TYPE_CHECKING:
    from jobs.scheduling.core import Schedule

T = TypeVar("T")

_start, _born = itemgetter(2), itemgetter(4)  # of an entry of Tracker._entries
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
    # job id -> (job, booking_key, the clock when its last exact search began)
    settled: dict[int, tuple[QueuedJob, tuple, float]]
    # owner (a job) -> the clock when it first took the room it holds, where not 0
    born: dict[int, int]
    clock: int  # searches begun in this chain of passes
    # job id -> (placements, replicas, where) of a settled booking kept from its stored
    # reservation: the next pass, given those very placements, books it as it was
    placed: dict[int, tuple]

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


class Tracker:
    """One pass's account of what its searches knew: which jobs may skip their search,
    and which are settled at the end.

    Room given back counts against a job only if it was taken before the job's last exact
    search began: room taken since (by a job booked after it, say) was free when it
    searched, so giving it back restores what that search saw. A clock counts the searches
    of a chain of passes; each owner of the profile's items keeps the clock when it first
    took room (``Profile.born``: 0, always counted, for what a pass begins with unless the
    last plan held the very same items). After an urgent submit voids the promises behind it, the
    room they held was taken after the searches of nearly every job ahead of them."""

    def __init__(self, schedule: Schedule, previous: Digest | None):
        self.schedule = schedule
        self.previous = previous if previous and previous.now <= schedule.now else None
        # (node index, start, end, born) given back
        self.log: list[tuple[int, float, float, int]] = []
        self.marks: dict[int, int] = {}  # job id -> log position of its last exact search
        # job id -> the clock when that search began (see _since)
        self.searched: dict[int, float] = {}
        self.clock = self.previous.clock if self.previous is not None else 0
        self._touched: set[int] = set()  # see _since
        self._read = 0  # log entries sorted into _by_node and _live so far
        # index -> (position, start, born)
        self._by_node: dict[int, list[tuple[int, float, int]]] = {}
        # a group's nodes -> [log position read, entries, earliest start and first born of
        # each BLOCK of them, their starts (Starts), their births (Aged)]: groups of other
        # demands on the same nodes share them (after an urgent submit, each made its own
        # from tens of thousands of entries)
        self._live: dict[frozenset[int], list] = {}
        self._nodes = len(schedule.infos)

    def begin(self) -> None:
        """The pass's holdings and re-booked reservations are in: from now on, log what the
        profile gives back, starting with what the last plan held and this one does not."""
        profile, born = self.schedule.profile, {}
        if self.previous is not None:
            freed, born = given_back(self.previous, self.schedule)
            self.log.extend(freed)
            profile.inherited = self.previous.born
        profile.freed, profile.born, profile.clock = self.log, born, self.clock

    def search(self, job: QueuedJob, search: Callable[[], T]) -> T:
        """Run a search for ``job`` (lifted out of the profile): its start is the earliest
        unless the budget cut it short."""
        profile, position = self.schedule.profile, len(self.log)
        self.clock += 1
        profile.clock = self.clock
        cut = profile.cut_short
        found = search()
        if profile.cut_short == cut:
            self.marks[job.id], self.searched[job.id] = position, self.clock
        else:
            self.marks.pop(job.id, None)
            self.searched.pop(job.id, None)
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
        searched = previous.settled[job.id][2]
        if self._reached(job, booking, 0, searched):
            return False
        self.marks[job.id], self.searched[job.id] = len(self.log), self._since(job, searched)
        return True

    def _since(self, job: QueuedJob, searched: float) -> float:
        """The clock from which room taken no longer counts against the job: none does (inf)
        once room taken before ``searched`` came back within its reach, even where it made
        no run the job could use. Such room was weighed with the room around it as it was
        then; given back later, room taken since would join it."""
        if job.id in self._touched:
            self._touched.discard(job.id)
            return inf
        return searched

    def _reached(self, job: QueuedJob, booking: Booking, since: int, searched: float) -> bool:
        """Whether room given back from log position ``since`` on, and taken before the
        clock ``searched`` (the job's last exact search), could let the job start before its
        booking: on a node it holds (lifted out, its own room joins it), or where a run of
        room for one replica of one of its specs overlaps it, starts before the booking and
        lasts the job's duration. Past REACH_LIMIT entries looked at, it may."""
        self._touched.discard(job.id)
        if since >= len(self.log):
            return False
        self._sort_in()
        start, duration = booking.start, job.duration
        reach, looked = start + duration, 0
        for index, _ in booking.replicas:
            entries = self._by_node.get(index, ())
            for k in range(bisect_left(entries, (since,)), len(entries)):
                if entries[k][2] >= searched:
                    continue
                looked += 1
                if entries[k][1] < reach or looked > REACH_LIMIT:
                    return True
        groups = [self._entries(group, nodes) for group, nodes in self._groups(job)]
        # Every entry given back before its reach is one the walk below looks at, each
        # group's in turn, until a run of room lets the job start earlier or it has looked
        # at REACH_LIMIT: with more than that it may, whatever the runs say. (A deep job
        # after a large change: such a pass went mostly in looking at them one by one.)
        if since == 0:
            over = REACH_LIMIT - looked
            for *_, starts, aged in groups:
                over -= aged.count(searched, reach, starts, over + 1)
                if over < 0:
                    return True
        for group, entries, blocks, _, aged in groups:
            demand, key = group[1], demand_key(group[1])
            for _, index, given, until, _ in self._within(entries, blocks, aged, since,
                                                           searched, reach):  # fmt: skip
                self._touched.add(job.id)
                looked += 1
                if looked > REACH_LIMIT:
                    return True
                for run_start, run_end in self.schedule.timelines[index].runs_over(
                    demand, key, given, until
                ):
                    begin = max(run_start, self.schedule.now)
                    if begin < start and run_end - begin >= duration:
                        return True
        return False

    @staticmethod
    def _within(entries, blocks, aged, since: int, searched: float, reach: float):
        """The group's entries from log position ``since`` on, taken before ``searched``
        and given back before ``reach``, in log order: from those taken before it where they
        are few (an urgent submit gives back tens of thousands taken later), else block by
        block, passing over a block none of which can be one."""
        first = bisect_left(entries, (since,))
        older = aged.older(searched, len(entries) // 8)
        if older is not None:
            for k in sorted(k for k in older if k >= first and entries[k][2] < reach):
                yield entries[k]
            return
        k, count = first, len(entries)
        while k < count:
            block = k // BLOCK
            end = min((block + 1) * BLOCK, count)
            earliest, oldest = blocks[block]
            if earliest < reach and oldest < searched:
                for entry in entries[k:end]:
                    if entry[2] < reach and entry[4] < searched:
                        yield entry
            k = end

    def _sort_in(self) -> None:
        log = self.log
        for position in range(self._read, len(log)):
            index, given, _, born = log[position]
            self._by_node.setdefault(index, []).append((position, given, born))
        self._read = len(log)

    def _entries(self, group: tuple, nodes: frozenset[int]) -> list:
        """The group, its log entries on the group's nodes in log order as (position, node
        index, start, end, born), the earliest start and the first born of each BLOCK of
        them, all their starts in order and their births: those read since its nodes were
        last asked about are added."""
        live = self._live.get(nodes)
        if live is None:
            live = self._live[nodes] = [0, [], [], Starts(), Aged()]
        read, entries, blocks, starts, aged = live
        log = self.log
        # In bulk: an urgent submit gives back tens of thousands at once.
        if len(nodes) == self._nodes:  # every node: nothing to leave out
            new = [(k, *entry) for k, entry in enumerate(log[read:], read)]
        else:
            new = [(k, *entry) for k, entry in enumerate(log[read:], read) if entry[0] in nodes]
        if new:
            place, first = len(entries), len(entries) // BLOCK
            entries.extend(new)
            del blocks[first:]
            for block in range(first * BLOCK, len(entries), BLOCK):
                part = entries[block : block + BLOCK]
                blocks.append((min(map(_start, part)), min(map(_born, part))))
            starts.pending.extend(map(_start, new))
            aged.pending.extend((e[4], e[2], k) for k, e in enumerate(new, place))
        live[0] = len(log)
        return [group, entries, blocks, starts, aged]

    def _groups(self, job: QueuedJob):
        """The job's specs' nodes, as ((rules, demand), node indices)."""
        schedule, rules = self.schedule, rule_key(job)
        for alternative in job.alternatives:
            yield (rules, alternative.demand), schedule.capable_set(job, alternative)

    def digest(self) -> Digest:
        """The note for the next pass (after the pass's last move)."""
        schedule = self.schedule
        now, settled, placed = schedule.now, {}, {}
        for job in schedule.order:
            position = self.marks.get(job.id)
            booking = schedule.bookings[job.id]
            if position is None or booking.start is None or booking.start == now:
                continue
            searched = self.searched[job.id]
            if not self._reached(job, booking, position, searched):
                searched = self._since(job, searched)
                settled[job.id] = (job, booking_key(schedule, booking), searched)
                if booking.placements is not None:
                    placed[job.id] = (booking.placements, booking.replicas, booking.where)
        profile = schedule.profile
        born, inherited = profile.born, profile.inherited
        profile.freed, profile.born, profile.inherited = None, None, {}
        owners = [job.id for job in schedule.order] + [item.owner for _, item in schedule.running]
        return Digest(
            now,
            {info.id: node_key(info) for info in schedule.infos},
            {tl.info.id: dict(tl.items) for tl in schedule.timelines},
            settled,
            {o: b for o in owners if (b := born[o] if o in born else inherited.get(o, 0))},
            self.clock,
            placed,
        )


def given_back(previous: Digest, schedule: Schedule) -> tuple[list, dict[int, int]]:
    """Room the last plan held that this pass's profile does not, as ``(node index, start,
    end, born)``: items gone or shrunk, and the whole of every node new or changed since;
    and the owners of items the profile holds otherwise than the last plan did, with 0:
    they took room anew (the others keep the clock the last plan gave them)."""
    now, freed, anew, born = schedule.now, [], {}, previous.born
    for info in schedule.infos:
        if previous.nodes.get(info.id) != node_key(info):
            freed.append((info.index, now, inf, 0))
            anew.update(dict.fromkeys((key[0] for key in schedule.timelines[info.index].items), 0))
    for node_id, items in previous.items.items():
        info = schedule.by_id.get(node_id)
        if info is None or previous.nodes[node_id] != node_key(info):
            continue  # gone (no room there) or counted whole above
        held = schedule.timelines[info.index].items
        if held == items:
            continue
        for key in held.keys() - items.keys():
            anew[key[0]] = 0
        for key, old in items.items():
            new = held.get(key)
            # Most are the same item (a kept reservation): equal tuples compare in C.
            if new == old:
                continue
            if new is not None:
                anew[key[0]] = 0
            if old.end > now and (new is None or not _covers(new, old, now)):
                freed.append((info.index, old.start, old.end, born.get(key[0], 0)))
    return freed, anew


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
