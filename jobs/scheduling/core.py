"""The scheduling core: queue order, gang admission, reservations and their bounds.

Plain data in, decisions out (SPEC Q2–Q5; DESIGN "Scheduling"). One pass, :func:`schedule`,
walks the queue in SPEC Q2 order over a time-resource profile (:mod:`.profile`) holding the
running jobs until their ``ends_at`` and gives every queued job a *reservation*: the earliest
start at which all its nodes (at least its elastic minimum) fit on nodes its rules allow,
beside everything already in the profile — on the first of its specs that starts earliest.
Jobs whose reservation starts now are admitted. A job behind others may start now only in
room their reservations leave (conservative backfill), so it never delays them.

Why a reservation's start is a real latest start: the next pass is given this pass's
reservations back (``committed``). It first re-books them as they were — still feasible,
since running jobs only end earlier than planned and nothing new may come ahead of them —
then, in queue order, lifts each one out and searches again only *up to its old start*,
keeping the old booking when nothing earlier fits (only those room given back could
reach, see :mod:`.settled`, and at most COMPRESSIONS of them a pass: the rest wait for the
next). Every booking made is feasible beside all others, so the profile never overbooks a
node, and no reservation ever moves later.
Last, every start is made ``now`` or the end of some job on its nodes (outcome.settle):
so the earliest start still to come is a running job's end, a pass comes by then (jobs end
by their ``ends_at``), and each job is admitted by its reserved start. Reservations are
all-or-none (SPEC Q3), so admissions are too. A job that arrives ahead of committed ones (a higher
priority, a resubmission) voids the commitments behind it: those are planned afresh.
A job with no promise that only fair share (SPEC G3) put ahead of promised jobs of its own
class voids nothing: it is searched for beside their promises (rebook.recommit_all).
A pass plans at most FRESH jobs afresh (or a FRESH_SHARE-th of the queue): the rest of a
long queue with no plan is *not yet planned* (no start, no promise, nothing admitted), and
the passes after it plan it part by part, beside the promises made meanwhile.
The property test in tests/jobs/test_scheduling_property.py simulates exactly this.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from math import inf
from operator import attrgetter

from jobs.scheduling import outcome
from jobs.scheduling.booking import Booking, booked_items
from jobs.scheduling.capable import Capable
from jobs.scheduling.data import (
    Admission,
    Alternative,
    QueuedJob,
    Reservation,
    RunningJob,
    SchedNode,
)
from jobs.scheduling.node_fit import NodeInfo, to_mask
from jobs.scheduling.profile import Profile
from jobs.scheduling.quotas import Gate
from jobs.scheduling.reasons import Shortfall
from jobs.scheduling.rebook import recommit_all
from jobs.scheduling.rules import rule_key
from jobs.scheduling.search import Found, earliest, place
from jobs.scheduling.settled import NO_TRACKER, Digest, NoTracker, Tracker
from jobs.scheduling.timeline import Item
from jobs.scheduling.warm import carried, forget_answers, left_with

# A running job past its ends_at is being stopped (SPEC F7) but still holds its nodes: plan
# as if it left this many seconds from now.
OVERDUE = 60.0
# Node evaluations one earliest-start search may spend looking for holes before it appends
# the job where nodes fall idle; keeps a pass over a long queue linear in its length.
BUDGET = 4000
# Searches one pass may spend moving kept reservations earlier. Past them, the rest keep
# their bookings (a promise never moves later) and the next pass goes on with them: the
# jobs searched here are settled (see .settled), so it does not search them again. One
# job ending early can move a long queue's reservations in a cascade; this keeps a pass
# after it about as cheap as the next.
COMPRESSIONS = 1000
# Jobs one pass may plan afresh (searched with no kept promise). A long queue with no plan
# (the first pass over it, or a very urgent job voiding every promise behind it) is planned
# this many jobs a pass, in queue order, as backfill schedulers test a bounded number of
# jobs a cycle: the rest are *not yet planned* (reasons.NotYetPlanned), hold no promise and
# start nothing, and the next pass (asked for at once) goes on from there. A search costs
# 0.4-1 ms a job the deeper the plan: a pass stays under a second however long the queue.
FRESH = 500
# ... or this share of the queue, if more: the passes that plan a long queue then number
# at most this many whatever its length (each costs its kept promises too).
FRESH_SHARE = 20


def order(queue: Iterable[QueuedJob]) -> list[QueuedJob]:
    """SPEC Q2: priority (very urgent first), then resubmitted after a fault, then the
    team's fair-share standing (SPEC G3), then submit time, then id."""
    return sorted(queue, key=attrgetter("queue_key"))


class Schedule(Capable):
    """One pass: its reservations and admissions, plus the profile predictions reuse."""

    def __init__(
        self, nodes: Sequence[SchedNode], now: float, budget: int = BUDGET,
        compressions: float = COMPRESSIONS, warm: Profile | None = None,
        previous: Digest | None = None, fresh: float | None = None,
    ):  # fmt: skip
        self.now, self.budget = now, budget
        self.fresh = fresh  # fresh searches left in this pass (None: set by run)
        # Jobs left unplanned when they ran out, and the queue position of the first.
        self.unplanned: set[int] = set()
        self.first_unplanned: float = inf
        self.compressions = compressions  # left in this pass
        self.compressions_ran_out = False  # a kept reservation went unsearched for lack
        self.nodes = list(nodes)
        self.infos = [NodeInfo(i, n.state, n.pool, n.driver) for i, n in enumerate(nodes)]
        self.by_id = {info.id: info for info in self.infos}
        # ``warm``: the last pass's profile, to start from (see .warm). Until the kept
        # reservations are booked, ``holding`` gathers the running jobs' replicas it must
        # hold (None: the profile is made afresh, and they are booked as they come).
        # ``as_left``: it is the profile the pass that left ``previous`` ended with.
        self.as_left = left_with(warm, previous)
        carried_over = carried(warm, self.infos, now)
        self.profile = carried_over or Profile(self.infos, now)
        self.holding: list[tuple[int, tuple, Item]] | None = None if carried_over is None else []
        self.timelines = self.profile.timelines
        self.running: list[tuple[int, Item]] = []
        self.order: list[QueuedJob] = []
        self.bookings: dict[int, Booking] = {}
        # Jobs with no promise searched for beside the promises of their class (rebook).
        self.deferred: set[int] = set()
        self.reservations: dict[int, Reservation] = {}
        self.admissions: list[Admission] = []
        Capable.__init__(self)
        self.reasons_cache: dict[tuple, int | Shortfall] = {}  # see rules.wait_reason
        self.keys: list[tuple] = []  # queue_key of each job, in order
        self.ahead_cache: dict[int, Profile] = {}  # see predict.ahead
        self.fit_now_cache: dict[tuple, int] = {}  # see predict._fit_now
        self.never_cache: dict[tuple, object] = {}  # see predict.never_fits
        self.track: Tracker | NoTracker = NO_TRACKER
        self.digest: Digest | None = None  # for the next pass (see run)
        # The queue's split by quota maximums (SPEC G1): set before run, which plans only
        # the jobs it lets in; the held ones come last, with no start (see outcome.held).
        self.quota = Gate()
        # Each project's fair-share standing the queue was ordered by (SPEC G3): a draft
        # takes its project's, to find its place among them.
        self.fair: dict[int | None, float] = {}

    def __getstate__(self) -> dict:
        """What travels when the plan is stored (jobs.admission.plans): the plan itself,
        not what searches learnt (made again on demand) nor the reservations, which are
        derived from the bookings (:meth:`reservation` works one out when asked)."""
        state = {**self.__dict__, "reservations": None, "admissions": [], "digest": None}
        for name in ("_capable", "_capable_sets", "_allowed", "reasons_cache", "ahead_cache",
                     "fit_now_cache", "never_cache"):  # fmt: skip
            state[name] = {}
        return state

    def reservation(self, job_id: int) -> Reservation | None:
        """A queued job's reservation (None if the plan does not hold the job)."""
        if job_id in self.quota.held and self.reservations is None:
            return outcome.held(self)[job_id]
        if self.reservations is not None or job_id not in self.bookings:
            return (self.reservations or {}).get(job_id)
        job = next(job for job in self.order if job.id == job_id)
        position = bisect_left(self.keys, job.queue_key) + 1
        return outcome.reservation_of(self, job, self.bookings[job_id], position)

    # -- the pass ---------------------------------------------------------------------------

    def hold(self, job: RunningJob, overdue: float = OVERDUE) -> None:
        """Book a running job's holdings from now until its ``ends_at``."""
        end = job.ends_at if job.ends_at > self.now else self.now + overdue
        for k, held in enumerate(job.holdings):
            node_id, cpu, memory, slots = held
            info = self.by_id.get(node_id)
            if info is not None:  # a node taken out of scheduling holds nothing we plan on
                item = Item(self.now, end, cpu, memory, to_mask(slots), job.id)
                if self.holding is None:
                    self.profile.add(info.index, (job.id, k), item)
                else:
                    self.holding.append((info.index, (job.id, k), item))
                self.running.append((info.index, item))

    def hand_over(self) -> Profile:
        """This pass's profile, for the next pass of this process to start from (``warm``):
        it is changed there, so this schedule no longer has one."""
        profile = self.profile
        forget_answers(profile)
        self.profile = self.timelines = None
        return profile

    def run(
        self,
        queue: Iterable[QueuedJob],
        committed: Mapping[int, Reservation],
        *,
        replay: bool = False,
        previous: Digest | None = None,
    ) -> None:
        """Plan the queue. ``replay``: re-book every valid commitment as it is and search
        only for the other jobs (no compression): a stored plan rebuilt, not a pass.
        ``previous``: the last pass's :attr:`digest`, which spares the searches that would
        keep a booking as it is (see :mod:`.settled`)."""
        self.order = order(queue)
        self.keys = [job.queue_key for job in self.order]
        if self.fresh is None:
            self.fresh = max(FRESH, len(self.order) // FRESH_SHARE)
        kept, unkept = recommit_all(self, committed, replay, None if replay else previous)
        forget_answers(self.profile)  # searches start alike, carried over or not (.warm)
        for job in unkept:
            self._fresh(job)
        if not replay:
            self.track = Tracker(self, previous)
            self.track.begin()
            for job in self.order[:kept]:
                if job.id in self.deferred:  # come ahead by fair share alone: see rebook
                    self._fresh(job)
                else:
                    self._compress(job)
            for job in self.order[kept:]:
                self._fresh(job)
        outcome.settle(self)
        outcome.finish(self)
        if not replay:
            self.digest = self.track.digest()
            self.track = NO_TRACKER

    def _fresh(self, job: QueuedJob) -> None:
        if self.fresh <= 0:
            self.bookings[job.id] = Booking(None, None, [])
            self.unplanned.add(job.id)
            return
        self.fresh -= 1
        booking = self.track.search(job, lambda: self.book(job, self.profile, inf))
        self.bookings[job.id] = booking
        if booking.start is not None:
            self._insert(job, booking)

    def _rebook(self, job: QueuedJob, booking: Booking) -> bool:
        """Book the replicas one by one while each fits beside everything; all or none."""
        demand, end = booking.alternative.demand, booking.start + job.duration
        for k, (index, slots) in enumerate(booking.replicas):
            info, mask = self.infos[index], to_mask(slots)
            cpu, mem, used = self.timelines[index].view(booking.start, job.duration)
            if (
                cpu + demand.cpu > info.cpu_total
                or mem + demand.memory > info.mem_total
                or used & mask
            ):
                for j in range(k):
                    self.profile.remove(booking.replicas[j][0], (job.id, j))
                return False
            item = Item(booking.start, end, demand.cpu, demand.memory, mask, job.id)
            self.profile.add(index, (job.id, k), item)
        self.bookings[job.id] = booking
        return True

    def _compress(self, job: QueuedJob) -> None:
        """Move a committed reservation earlier if the profile now allows; never later."""
        old = self.bookings[job.id]
        if old.start is None or old.start == self.now or self.track.unmoved(job, old):
            return
        if self.compressions <= 0:
            self.compressions_ran_out = True
            return
        self.compressions -= 1
        given = len(self.profile.freed)
        self._remove(job, old)
        best = self.track.search(job, lambda: self._best(job, self.profile, old.start))
        if best is not None and best[1].start < old.start:
            self.bookings[job.id] = self._placed(job, *best, self.timelines)
        else:
            self.track.undo(given, job)  # booked again as it was: it gave nothing back
        self._insert(job, self.bookings[job.id])

    def book(self, job: QueuedJob, profile: Profile, horizon: float) -> Booking:
        """Where the job would go in ``profile`` at its earliest start (nothing is booked)."""
        best = self._best(job, profile, horizon)
        if best is None:
            return Booking(None, None, [])
        return self._placed(job, *best, profile.timelines)

    def _best(
        self, job: QueuedJob, profile: Profile, horizon: float
    ) -> tuple[Alternative, Found] | None:
        """The earliest start over the job's specs; ties go to the spec listed first."""
        best = None
        for alternative in job.alternatives:
            indices, idle = self.capable(job, alternative)
            if idle < alternative.min_nodes:
                continue
            found = earliest(
                profile,
                indices,
                alternative.demand,
                job.duration,
                alternative.min_nodes,
                horizon if best is None else best[1].start,
                self.budget,
                group=(rule_key(job), alternative.demand),
                enough=alternative.nodes,
            )
            if found is not None and (best is None or found.start < best[1].start):
                best = (alternative, found)
                if found.start == self.now:
                    break
        return best

    def _placed(self, job, alternative, found, timelines) -> Booking:
        want = min(alternative.nodes, found.total)
        replicas = place(found, timelines, alternative.demand, job.duration, want)
        start = found.start
        if start == self.now:
            return Booking(start, alternative, replicas)
        # Blockers: jobs ending at the start on the nodes with room then. Nodes of one shape
        # share their breakpoints: when the start is none of theirs, none ends then.
        blockers: set[int] = set()
        for count, nodes in found.groups:
            if count and start in timelines[nodes[0]].bounds:
                blockers.update(*[timelines[index].ends.get(start, ()) for index in nodes])
        blockers.discard(job.id)
        return Booking(found.start, alternative, replicas, tuple(sorted(blockers)))

    def _insert(self, job: QueuedJob, booking: Booking) -> None:
        for index, key, item in booked_items(job, booking):
            self.profile.add(index, key, item)
        self.bookings[job.id] = booking

    def _remove(self, job: QueuedJob, booking: Booking) -> None:
        for k, (index, _) in enumerate(booking.replicas):
            self.profile.remove(index, (job.id, k))

    def unplanned_ahead(self, position: int) -> bool:
        """Whether a job ahead of ``position`` is not planned yet: what a job there would
        get depends on where those go."""
        return self.first_unplanned < position
