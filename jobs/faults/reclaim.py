"""Reclaim (SPEC G2), the database side: after each admission pass (jobs.tasks.admit), the
queued jobs that wait within their project's guarantee while other teams run on borrowed
boards (*claims*), and the borrowers stopped for them (the rule is jobs.scheduling.reclaim's).

A claim is marked (``Job.claiming_since``): while it waits, no other team borrows more of
that accelerator model and pool (jobs.scheduling.quotas), so what its victims free is its
own. Each victim is interrupted like an elastic job that grows (jobs.faults.recovery): the
checkpoint signal, its graceful time, then back in the queue, resuming from its checkpoint
with checkpoint resume, else starting again; its event names the team and the job it
yielded to, and the claim's own event names its victims. A claim that no set of borrowers
would let start is not marked: nobody is stopped for nothing.

It runs under the admission pass's lock, so two workers never choose victims at once.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime
from math import ceil

from django.db.models import Sum
from django.utils import timezone
from django.utils.translation import gettext_noop

from console.words import counted, said
from jobs import lifecycle
from jobs.admission.db import exclusive
from jobs.admission.state import State, epoch, load, one_snapshot
from jobs.faults import diagnosis, recovery
from jobs.faults.policy import Cause
from jobs.models import Attempt, Job, Phase
from jobs.scheduling import passes
from jobs.scheduling.core import order
from jobs.scheduling.data import QueuedJob
from jobs.scheduling.quotas import EIGHTHS, Cap, per_node
from jobs.scheduling.reclaim import Borrower, Claim, candidates, victims
from resources.models import AcceleratorModel, Allocation
from resources.placement.answer import fit_now

log = logging.getLogger(__name__)

# Claims looked at per pass, first in queue order: each costs a few plans of the jobs ahead
# of it. The others wait their turn (a pass comes every few seconds).
MAX_CLAIMS = 3


def reclaim(now: datetime | None = None) -> list[int]:
    """One look at the claims; returns the ids of the attempts interrupted for them."""
    borrowing = Job.objects.filter(phase=Phase.RUNNING, borrowing=True).exists()
    marked = Job.objects.filter(phase=Phase.QUEUED, claiming_since__isnull=False).exists()
    if not borrowing and not marked:
        return []
    with exclusive() as taken:
        if not taken:
            return []
        state, borrowed = _snapshot(now)
        return _reclaim(state, borrowed, now or timezone.now())


def _snapshot(now: datetime | None):
    """The scheduling state and the borrowers as of one moment (REPEATABLE READ): read
    apart, a borrower requeued in between would be neither running nor queued, its boards
    still held in one and gone in the other, and a claim would look as if nobody could let
    it start (and lose its mark while its victim's job came back to borrow again)."""
    with one_snapshot():
        return load(now), _borrowers()


def _reclaim(state: State, borrowed, now: datetime) -> list[int]:
    own = [cap for cap in state.caps if len(cap.projects) == 1]
    borrowers, attempts, stopping = borrowed
    scopes = {(b.model, b.pool, b.project) for b in borrowers}
    # What each project's guarantee has left, for its queued jobs in queue order: a job
    # beyond it is no claim (it would borrow), and a claim nobody can help gives its share
    # back to the team's next job.
    room = {cap.id: cap.guaranteed - state.used.get(cap.id, 0) for cap in own}
    interrupted: list[int] = []
    kept: set[int] = set()
    later: set[int] = set()
    gone = set(stopping)
    for job in order(state.queue):
        within = _within(job, own, room)
        if within is None:
            continue
        cap, need = within
        # A claim stays one until it starts, even once its victims are gone: else their
        # jobs, back in the queue, could borrow its boards again before it starts.
        contested = any(m == cap.model and p == job.pool and o != job.project
                        for m, p, o in scopes)  # fmt: skip
        if not contested and not job.claiming:
            room[cap.id] -= need  # nobody borrows there: it starts as things stand
            continue
        if len(kept) + len(later) >= MAX_CLAIMS:
            later.add(job.id)  # its turn comes in a later pass; its mark stays as it is
            room[cap.id] -= need
            continue
        claim = Claim(job.id, job.project, cap.model, job.pool)
        chosen = _victims(state, job, claim, own, borrowers, frozenset(gone))
        if chosen is None:
            continue
        room[cap.id] -= need
        kept.add(job.id)
        if chosen:
            gone |= {b.id for b in chosen}
            interrupted += _stop(job, claim, chosen, attempts, state, own)
    unmark = [q.id for q in state.queue if q.claiming and q.id not in kept | later]
    Job.objects.filter(pk__in=unmark, phase=Phase.QUEUED).update(claiming_since=None)
    Job.objects.filter(pk__in=kept, phase=Phase.QUEUED, claiming_since__isnull=True).update(
        claiming_since=now
    )
    return interrupted


def _within(job: QueuedJob, own: list[Cap], room: dict[int, int]) -> tuple[Cap, int] | None:
    """The project's own cap ``job`` fits within the guarantee of, and what it needs there
    (at its elastic minimum); None when no spec of it does."""
    for alternative in job.alternatives:
        cap = next((c for c in own if c.covers(job.project, alternative, job.pool)), None)
        need = per_node(alternative) * alternative.min_nodes
        if cap is not None and need and need <= room[cap.id]:
            return cap, need
    return None


def _victims(state: State, job, claim: Claim, own, borrowers, gone: frozenset):
    """The borrowers to stop for ``claim`` ([] when those stopping already free enough;
    None when no run of them would let it start).

    The shortest run is searched with the cheap test (does it fit on what is free once they
    have gone?); the admission model then confirms it with one plan of the jobs ahead of
    the claim, which may take that room first: a deep queue costs one plan, not a plan per
    step of the search."""
    held, guaranteed = _standing(state, own, claim)
    ordered = candidates(claim, borrowers, held, guaranteed, gone)
    found = victims(ordered, lambda ids: _fits_now(state, job, ids | gone))
    if found is None:
        return None
    if found and not _starts(state, job, borrowers, frozenset(found) | gone):
        return None
    return [b for b in ordered if b.id in found]


def _fits_now(state: State, job: QueuedJob, gone: frozenset) -> bool:
    """Whether ``job`` fits on the resources free now once the jobs ``gone`` have left."""
    nodes = [replace(n, state=replace(n.state, used_slots=set(n.state.used_slots), _free=None))
             for n in state.nodes]  # fmt: skip
    by_id = {node.state.id: node.state for node in nodes}
    for running in state.running:
        if running.id in gone:
            continue
        for placement in running.holdings:
            node = by_id.get(placement.node_id)
            if node is not None:
                node.cpu_used += placement.cpu
                node.memory_used += placement.memory
                node.used_slots.update(placement.slots)
    return any(fit_now(nodes, job, a.demand) >= a.min_nodes for a in job.alternatives)


def _borrowers() -> tuple[list[Borrower], dict[int, Attempt], set[int]]:
    """The running borrowers whose attempt runs and may be stopped, their attempts, and the
    jobs whose reclaim is under way (stopping: what they hold is as good as free)."""
    live = Attempt.objects.filter(
        ended_at__isnull=True, subtask__isnull=True, job__phase=Phase.RUNNING
    )
    # Stopping: its attempt stopped for a reclaim is ending, or has ended and the job is
    # not requeued yet (its boards are still held for a moment): not once it runs again.
    reclaimed = Attempt.objects.filter(
        subtask__isnull=True, job__phase=Phase.RUNNING, stop_cause=Attempt.StopCause.RECLAIM
    )
    running_again = live.exclude(stop_cause=Attempt.StopCause.RECLAIM).values("job_id")
    stopping = set(reclaimed.exclude(job_id__in=running_again).values_list("job_id", flat=True))
    attempts = {
        a.job_id: a
        for a in live.filter(
            state=Attempt.State.RUNNING, stop_cause="", job__borrowing=True
        ).select_related("job")
    }
    rows = (
        Allocation.objects.live()
        .filter(
            holder_kind=Allocation.Holder.JOB, holder_id__in=[*attempts, *stopping], boards__gt=0
        )
        .values("holder_id", "node__accelerator_model", "pool", "project")
        .annotate(boards=Sum("boards"))
        .order_by("-boards")
    )
    borrowers, seen = [], set()
    for row in rows:
        job_id = row["holder_id"]
        if job_id in seen or row["project"] is None:
            continue
        seen.add(job_id)
        attempt = attempts.get(job_id)
        job = attempt.job if attempt else None
        borrowers.append(
            Borrower(
                id=job_id,
                project=row["project"],
                priority=job.priority if job else 0,
                started_at=epoch(job.started_at or job.admitted_at) if job else 0.0,
                model=row["node__accelerator_model"],
                pool=row["pool"],
                holds=ceil(row["boards"] * EIGHTHS),
            )
        )
    return borrowers, attempts, stopping


def _standing(state: State, own: list[Cap], claim: Claim) -> tuple[dict, dict]:
    """Eighths each project holds now, and is guaranteed, of the claim's model and pool."""
    held, guaranteed = {}, {}
    for cap in own:
        if cap.model == claim.model and cap.pool in (None, claim.pool):
            (project,) = cap.projects
            held[project] = state.used.get(cap.id, 0)
            guaranteed[project] = cap.guaranteed
    return held, guaranteed


def _starts(state: State, job: QueuedJob, borrowers: list[Borrower], gone: frozenset) -> bool:
    """Whether ``job``, claiming, would be admitted now with the jobs ``gone`` stopped:
    planned after the jobs ahead of it, as the next pass would."""
    claiming = replace(job, claiming=True)
    ahead = [q for q in state.queue if q.queue_key < job.queue_key]
    kept = {q.id: state.committed[q.id] for q in ahead if q.id in state.committed}
    running = [r for r in state.running if r.id not in gone]
    used = dict(state.used)
    for b in (b for b in borrowers if b.id in gone):
        for cap in state.caps:
            if b.project in cap.projects and cap.model == b.model and cap.pool in (None, b.pool):
                used[cap.id] = used.get(cap.id, 0) - b.holds
    plan = passes.schedule(state.nodes, running, [*ahead, claiming], state.now, kept,
                           caps=state.caps, used=used)  # fmt: skip
    return any(admission.job_id == job.id for admission in plan.admissions)


def _stop(job, claim: Claim, chosen: list[Borrower], attempts, state: State, own) -> list[int]:
    """Interrupt the victims for ``claim``, with events on both sides."""
    # Each project's own cap on the claim's boards (a project may have one per model).
    holders = {next(iter(cap.projects)): cap for cap in own
               if cap.model == claim.model and cap.pool in (None, claim.pool)}  # fmt: skip
    model = AcceleratorModel.objects.filter(pk=claim.model).values_list("name", flat=True).first()
    mine = holders.get(claim.project)
    stopped = []
    for victim in chosen:
        theirs = holders.get(victim.project)
        values = {
            "claimant": mine.holder if mine else "",
            "job": state.names.get(job.id, job.id),
            "model": model or "",
            "holder": theirs.holder if theirs else "",
            "own": f"{(theirs.guaranteed if theirs else 0) / EIGHTHS:g}",
        }
        if theirs is not None and theirs.guaranteed:
            words = gettext_noop(
                "Its %(model)s boards are reclaimed for %(claimant)s, whose job %(job)s waits "
                "within its guarantee; %(holder)s runs beyond its own guarantee of %(own)s."
            )
        else:
            words = gettext_noop(
                "Its %(model)s boards are reclaimed for %(claimant)s, whose job %(job)s waits "
                "within its guarantee; %(holder)s has no guarantee of them."
            )
        message = said(words, **values)
        attempt = attempts[victim.id]
        if recovery.interrupt(attempt, Cause.RECLAIM, "reclaim", diagnosis.nodes_of(attempt),
                              message):  # fmt: skip
            log.info("job %s stops: its boards go to job %s", victim.id, job.id)
            stopped.append(attempt)
    if stopped:
        names = ", ".join(a.job.name for a in stopped)
        teams = ", ".join(dict.fromkeys(holders[b.project].holder for b in chosen
                                        if b.project in holders))  # fmt: skip
        lifecycle.record(
            Job.objects.get(pk=job.id),
            said(
                counted(
                    "Reclaiming boards for it: %(n)s job of %(teams)s on borrowed boards stops "
                    "(%(jobs)s); it starts once its boards are free.",
                    "Reclaiming boards for it: %(n)s jobs of %(teams)s on borrowed boards stop "
                    "(%(jobs)s); it starts once their boards are free.",
                    "n",
                ),
                n=len(stopped),
                teams=teams,
                jobs=names,
            ),
            item="reclaim",
        )
    return [a.pk for a in stopped]
