"""Queue prediction for a form draft (SPEC J24, Q5): the admission model, asked "what if".

A draft submitted now joins the queue at its SPEC Q2 position, behind every job of its
priority or above. The next pass would keep those jobs' reservations and plan the draft
beside them, ignoring the jobs behind it; so the prediction is one earliest-start search
against the profile of the last pass restricted to the jobs ahead of the draft (plus the
running ones and those the pass admitted). Nothing is re-planned: a form can ask on every
change, and a 10,000-job queue costs one search, not 10,000. The restricted profile is
built once per position and cached on the :class:`~.core.Schedule` (a draft's position
only depends on its priority, so there are few).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from math import inf

from jobs.scheduling import core, passes
from jobs.scheduling.data import (
    Alternative,
    Prediction,
    QueuedJob,
    Reservation,
    RunningJob,
    SchedNode,
    Suggestion,
)
from jobs.scheduling.profile import Profile
from jobs.scheduling.quotas import Cap
from jobs.scheduling.reasons import NeverFits, NotYetPlanned
from jobs.scheduling.rebook import job_class
from jobs.scheduling.rules import never_reason, rule_key, wait_reason
from resources.placement import answer as placement


def never_fits(
    nodes: Sequence[SchedNode], draft: QueuedJob, memo: dict | None = None
) -> NeverFits | None:
    """Why the draft could never start on these nodes, even all idle; None if it could.

    Pass the whole inventory: the form refuses such a draft instead of queueing it for ever
    (more boards per node than any allowed node has, a pool with no nodes, pinned node names
    that do not exist or cannot hold it...). The same answer as /cluster/'s and admission's:
    :func:`resources.placement.answer.never`.
    """
    wants = [(alternative.demand, alternative.min_nodes) for alternative in draft.alternatives]
    if memo is None:
        return placement.never(nodes, draft, wants)
    # ``memo``: answers kept for these same nodes (a plan's), by what they depend on.
    key = ("never", draft.pool, draft.driver, draft.node_names, draft.allowed_pools,
           tuple(wants))  # fmt: skip
    if key not in memo:
        memo[key] = placement.never(nodes, draft, wants)
    return memo[key]


def predict(
    nodes: Sequence[SchedNode],
    running: Iterable[RunningJob],
    queue: Iterable[QueuedJob],
    draft: QueuedJob,
    now: float,
    *,
    schedule: core.Schedule | None = None,
    other_specs: Sequence[Alternative] = (),
) -> Prediction:
    """What happens if ``draft`` is submitted now.

    ``draft`` is a QueuedJob with an id no queued job has and ``submitted_at=now``. Pass
    ``schedule``, the last pass's result, to answer from its profile as of that pass (fast;
    ``nodes``, ``running``, ``queue`` and ``now`` are then not used); without it the queue
    is planned first. ``other_specs``: specs the form could offer instead (e.g. others
    of the same accelerator model); those that would start now come back as suggestions.
    """
    if schedule is None:
        schedule = passes.schedule(nodes, running, queue, now)
    return forecast(schedule, draft, other_specs)


@passes.without_gc  # a position's profile is built on first use: see passes.without_gc
def forecast(
    schedule: core.Schedule, draft: QueuedJob, other_specs: Sequence[Alternative] = ()
) -> Prediction:
    """:func:`predict` from a pass already made."""
    draft = replace(draft, fair=schedule.fair.get(draft.project, 0.0))
    keys = schedule.keys
    position, length = bisect_left(keys, draft.queue_key) + 1, len(keys) + 1
    never = never_fits(schedule.nodes, draft, schedule.never_cache)
    if never is not None:
        return Prediction(False, None, position, length, None, never)
    held = schedule.quota.holds(draft)
    if held is not None:  # after every planned and held job, until its team has room
        last = length + len(schedule.quota.held)
        return Prediction(False, None, last, last, None, held)
    behind = planned_behind(keys, draft, position)
    if schedule.unplanned_ahead(behind):  # its start depends on where those go
        return Prediction(False, None, position, length, None, NotYetPlanned())
    profile = ahead(schedule, behind)
    booking = schedule.book(draft, profile, inf)
    if booking.start is None:
        return Prediction(False, None, position, length, None, never_reason(schedule.infos, draft))
    if booking.start == schedule.now:
        return Prediction(True, booking.alternative.spec_id, position, length, booking.start, None)
    return Prediction(
        starts_now=False,
        spec_id=booking.alternative.spec_id,
        position=position,
        queue_length=length,
        latest_start=booking.start,
        reason=wait_reason(schedule, draft, booking.alternative),
        blockers=booking.blockers,
        suggestions=_suggest(schedule, draft, profile, other_specs),
    )


def standing(schedule: core.Schedule, job_id: int) -> Prediction | None:
    """What the plan says of a job it already holds (just submitted, say): its own
    reservation, in the same terms as a draft's forecast. None if the plan lacks it."""
    reservation = schedule.reservation(job_id)
    if reservation is None:
        return None
    now = reservation.start == schedule.now
    return Prediction(
        starts_now=now,
        spec_id=reservation.spec_id,
        position=reservation.position,
        queue_length=len(schedule.order) + len(schedule.quota.held),
        latest_start=reservation.start,
        reason=None if now else reservation.reason,
        blockers=() if now else reservation.blockers,
    )


def planned_behind(keys: Sequence[tuple], draft: QueuedJob, position: int) -> int:
    """The position whose profile the draft is planned against: its own, unless fair share
    put it ahead of jobs of its own class (SPEC G3), whose promises the next pass keeps:
    then the end of its class (see jobs.scheduling.rebook.recommit_all)."""
    end = bisect_left(keys, (*job_class(draft), inf)) + 1
    return end if end > position else position


def ahead(schedule: core.Schedule, position: int) -> Profile:
    """The profile a job at ``position`` is planned against: the running jobs, the jobs
    admitted by the pass and the reservations of the jobs ahead of it."""
    if position > len(schedule.order):
        return schedule.profile
    if position not in schedule.ahead_cache:
        profile = Profile(schedule.infos, schedule.now)
        for k, (index, item) in enumerate(schedule.running):
            profile.add(index, ("running", k), item)
        for k, job in enumerate(schedule.order, 1):
            booking = schedule.bookings[job.id]
            if booking.start is not None and (k < position or booking.start == schedule.now):
                for r, (index, _) in enumerate(booking.replicas):
                    tl = schedule.timelines[index]
                    profile.add(index, (job.id, r), tl.items[(job.id, r)])
        schedule.ahead_cache[position] = profile
    return schedule.ahead_cache[position]


def _fit_now(
    schedule: core.Schedule, job: QueuedJob, alternative: Alternative, profile: Profile
) -> int:
    """Replicas the nodes the job may use hold now in ``profile`` (one of the schedule's, so
    the count is kept on the schedule: the form asks again on every change and every few
    seconds)."""
    demand, duration = alternative.demand, job.duration
    key = (id(profile), rule_key(job), demand, duration)
    count = schedule.fit_now_cache.get(key)
    if count is None:
        indices, _ = schedule.capable(job, alternative)
        now, timelines = schedule.now, profile.timelines
        count = sum(timelines[i].count(demand, duration, now)[0] for i in indices)
        schedule.fit_now_cache[key] = count
    return count


def _starts_now(schedule: core.Schedule, job: QueuedJob, profile: Profile) -> bool:
    return any(
        _fit_now(schedule, job, alternative, profile) >= alternative.min_nodes
        for alternative in job.alternatives
    )


def _suggest(
    schedule: core.Schedule,
    draft: QueuedJob,
    profile: Profile,
    other_specs: Sequence[Alternative],
) -> tuple[Suggestion, ...]:
    """Changes that would let the draft start now: fewer nodes (or that many as its elastic
    minimum), another spec, another pool its project may use."""
    suggestions = []
    fit = _fit_now(schedule, draft, draft.alternatives[0], profile)
    if fit:
        suggestions += [Suggestion("nodes", fit), Suggestion("elastic", fit)]
    own = {alternative.spec_id for alternative in draft.alternatives}
    for alternative in other_specs:
        if alternative.spec_id not in own:
            variant = replace(draft, alternatives=(alternative,))
            if _starts_now(schedule, variant, profile):
                suggestions.append(Suggestion("spec", alternative.spec_id))
    for pool in [*sorted(draft.allowed_pools), None]:
        if pool != draft.pool and _starts_now(schedule, replace(draft, pool=pool), profile):
            suggestions.append(Suggestion("pool", pool))
    return tuple(suggestions)


def room_to_grow(
    nodes: Sequence[SchedNode],
    running: Iterable[RunningJob],
    queue: Iterable[QueuedJob],
    job: QueuedJob,
    now: float,
    committed: Mapping[int, Reservation] | None = None,
    *,
    caps: Sequence[Cap] = (),
    used: Mapping[int, int] | None = None,
) -> int:
    """How many nodes a running elastic job would be admitted on now if it were requeued
    (SPEC F5): ``job`` is it as the queue would hold it (resubmitted, at the node count it
    asked for, its elastic minimum); ``running`` may still list it, its holdings are given
    back. 0 when it would not start now. ``caps`` and ``used`` (without this job's own
    boards): its team's quota maximums, which it grows within (SPEC G1).

    Only the jobs ahead of it in SPEC Q2 order are planned: a requeued job goes before the
    others, so their room is not its to keep, while room a job ahead is promised is
    (booked first, with its commitment kept, as the next pass would).
    """
    ahead_of = [q for q in queue if q.id != job.id and q.queue_key < job.queue_key]
    ids = {q.id for q in ahead_of}
    kept = {k: v for k, v in (committed or {}).items() if k in ids}
    others = [r for r in running if r.id != job.id]
    plan = passes.schedule(nodes, others, ahead_of, now, kept, caps=caps, used=used)
    fitted = plan.quota.fitted(job)
    if fitted is None:
        return 0
    booking = plan.book(fitted, plan.profile, inf)
    return len(booking.replicas) if booking.start == now else 0
