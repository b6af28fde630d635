"""The thin database layer around the pure core: one pass, its decisions written back (the
state it plans from is read by :mod:`jobs.admission.state`).

One admission pass at a time, cluster-wide: a PostgreSQL advisory lock is taken without
waiting, so a concurrent or duplicate pass is a no-op. Admissions are written in chunks, a
transaction each: the jobs' moves to *admitted* (from *queued* only) and their allocation
rows commit together or not at all.
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone, translation

from console import rows
from console.celery import send
from console.words import counted, said
from jobs import lifecycle
from jobs.admission import plans
from jobs.admission.standing import record
from jobs.admission.state import (
    Seen,
    State,
    epoch,
    load_consistent,
    moment,
    seen,
)
from jobs.admission.words import Names, admitted_borrowing
from jobs.models import Phase
from jobs.scheduling import passes
from jobs.scheduling.profile import Profile
from jobs.scheduling.quotas import Borrowed, borrowing
from jobs.scheduling.settled import Digest
from resources.models import Allocation, NodeSpec

log = logging.getLogger(__name__)

# pg advisory lock key of the admission pass ("adm" in ASCII).
LOCK_KEY = 0x61646D


@dataclass
class PassResult:
    ran: bool
    admitted: list[int] = field(default_factory=list)
    queued: int = 0
    quiet: bool = False  # skipped: nothing it rests on changed since the last full pass
    # Jobs left for the next pass to plan (core.FRESH): jobs.tasks.admit asks for it once
    # its reclaim, which holds the lock too, is done (asked for before, it could find the
    # lock still held and end as a no-op, and the parts would wait for beat).
    unplanned: int = 0


def prune_queue_changes(minutes: int = 10) -> None:
    """Forget old entries of the change log the form's prediction checks its plan against
    (jobs.admission.prediction): a plan is never kept that long, so they can no longer matter."""
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM jobs_queue_change WHERE at < now() - make_interval(mins => %s)",
            [minutes],
        )


def _try_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY])
        return bool(cursor.fetchone()[0])


def _unlock() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])


@contextmanager
def exclusive():
    """The admission pass's lock, without waiting: yields whether it was taken (the
    reclaim after a pass runs under it too, jobs.admission.reclaim)."""
    if not _try_lock():
        yield False
        return
    try:
        yield True
    finally:
        _unlock()


def ask_for_pass() -> None:
    """Ask the worker for an admission pass soon (after the current transaction commits):
    the queue or the inventory changed."""
    transaction.on_commit(lambda: send("jobs.tasks.admit"))


@dataclass(frozen=True)
class Quiet:
    """What a pass that changed nothing saw. Given the same state, a pass plans the same:
    while its plan still holds (:class:`~jobs.admission.state.Seen`), the next pass would
    change nothing either, and is skipped."""

    seen: Seen
    queued: int
    until: float  # time.monotonic(): a full pass comes by then all the same


# A full pass comes at least this often, even when nothing changed: a bound on how long the
# skip relies on the change log alone (whose entries are pruned after minutes).
QUIET_SECONDS = 60.0

_quiet: Quiet | None = None  # per process: another process's passes are not known here
# The last pass's digest in this process: the next pass searches again only the jobs whose
# reservation could move (jobs.scheduling.settled; any earlier digest is sound).
_previous: Digest | None = None
# The last pass's profile in this process: the next pass starts from it, changed where the
# state did, rather than booking every running job and reservation afresh
# (jobs.scheduling.warm; any earlier pass's profile is sound, the plan is the same).
_profile: Profile | None = None


def _still_quiet(now: float) -> Quiet | None:
    quiet = _quiet
    if quiet is None or time.monotonic() > quiet.until or not quiet.seen.holds(now):
        return None
    return quiet


@passes.without_gc  # thousands of rows read and written: see passes.without_gc
def run_pass(now: datetime | None = None) -> PassResult:
    """One admission pass; a no-op (``ran=False``) while another pass holds the lock."""
    global _quiet, _previous, _profile
    if connection.in_atomic_block:
        raise RuntimeError("an admission pass commits as it goes: call it outside a transaction")
    if not _try_lock():
        return PassResult(ran=False)
    # Stored texts (events, reasons) are in the site's language, whoever triggered the pass.
    language = translation.get_language()
    translation.activate(settings.LANGUAGE_CODE)
    try:
        quiet = _still_quiet(epoch(now or timezone.now()))
        if quiet is not None:
            return PassResult(ran=True, queued=quiet.queued, quiet=True)
        _quiet = None
        state, snapshot, last = load_consistent(now)
        warm, _profile = _profile, None  # changed by the pass: of no use if it fails
        result = state.plan(passes.schedule, previous=_previous, warm=warm)
        _previous = result.digest
        spec_names = dict(NodeSpec.objects.values_list("pk", "name"))
        own: list[str] = []  # the transactions that write this pass's decisions
        admitted = _admit_all(result.admissions, state, spec_names, own)
        _rejoined(result, state, own)
        changed = record(result.reservations, state, admitted, own)
        # Never quiet with jobs left unplanned (the next part follows: jobs.tasks.admit) or
        # kept reservations left unsearched.
        quiet = not (admitted or changed or result.unplanned or result.compressions_ran_out)
        if quiet:
            # An overdue job leaves a minute after each pass's moment: never quiet then.
            plan = seen(state, snapshot, last, result.reservations, overdue_for=0.0)
            _quiet = Quiet(plan, len(state.queue), time.monotonic() + QUIET_SECONDS)
        plans.offer(result, seen(state, snapshot, last, result.reservations, plans.OVERDUE_SECONDS,
                              tuple(own)), more_to_come=bool(result.unplanned))  # fmt: skip
        _profile = result.hand_over()  # once published: the plan is stored with it
        return PassResult(ran=True, admitted=admitted, queued=len(state.queue) - len(admitted),
                          unplanned=len(result.unplanned))  # fmt: skip
    finally:
        translation.activate(language) if language else translation.deactivate()
        _unlock()


def _rejoined(result, state: State, own: list[str]) -> None:
    """Jobs held at their team's quota maximum in the last pass and let in by this one:
    from now on they are planned as joining the queue now (passes.joined_at)."""
    ids = [job.id for job in result.quota.plannable if job.id in state.rejoining]
    if not ids:
        return
    at = moment(passes.joined_at(state.queue, state.now))  # the stamp the pass planned with
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE jobs_job SET quota_since = %s WHERE id = ANY(%s) AND phase = %s",
            [at, ids, Phase.QUEUED],
        )
        own.append(_xid())


def _xid() -> str:
    """This transaction's id (as text): the change log names the writer of each entry."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_xact_id()::text")
        return cursor.fetchone()[0]


# Admissions written per transaction: a pass that admits thousands commits them in chunks, so
# that the first jobs start launching while the rest are written and no transaction holds
# thousands of row locks.
CHUNK = 500


def _admit_all(admissions, state: State, spec_names: dict[int, str], own: list[str]) -> list[int]:
    """Write the pass's admissions: the ids of the jobs admitted. Each transaction's id is
    added to ``own``."""
    borrowed = _borrowed(admissions, state)
    admitted = []
    for first in range(0, len(admissions), CHUNK):
        chunk = admissions[first : first + CHUNK]
        admitted += _admit(chunk, state, spec_names, own, borrowed)
    return admitted


def _borrowed(admissions, state: State) -> dict[int, Borrowed]:
    """The admissions beyond their project's guarantee (SPEC G2), in admission order."""
    if not state.caps:
        return {}
    queued = {job.id: job for job in state.queue}
    starts = []
    for admission in admissions:
        job = queued[admission.job_id]
        spec = next(a for a in job.alternatives if a.spec_id == admission.spec_id)
        starts.append((job, spec, len(admission.placements)))
    return borrowing(starts, state.caps, state.used)


@transaction.atomic
def _admit(
    admissions, state: State, spec_names: dict[int, str], own: list[str],
    borrowed: dict[int, Borrowed] | None = None,
) -> list[int]:  # fmt: skip
    """The jobs' moves to admitted and their allocations, in one transaction.

    Each move is from *queued* (lifecycle.move_all): a job stopped or deleted since the pass
    loaded it is left alone, and nothing is allocated for it.
    """
    names = Names()
    moves = [_move(admission, state, spec_names, borrowed or {}, names) for admission in admissions]
    moved = {job.pk: job for job in lifecycle.move_all(moves, Phase.ADMITTED)}
    if moved:
        own.append(_xid())
    nodes = {node.state.id: node for node in state.nodes}
    rows.insert(
        Allocation,
        (
            {
                "node_id": placement.node_id,
                "holder_kind": Allocation.Holder.JOB,
                "holder_id": job_id,
                "label": moved[job_id].name,
                "replica": f"worker-{index}",
                "cpu_millicores": placement.cpu,
                "memory_mib": placement.memory,
                "slots": list(placement.slots),
                **ledger(
                    state.holders.get(job_id, (None, None)),
                    nodes[placement.node_id].pool,
                    nodes[placement.node_id].state.slices,
                    placement.slots,
                ),
            }
            for job_id, placements in ((a.job_id, a.placements) for a in admissions)
            if job_id in moved
            for index, placement in enumerate(placements)
        ),
    )
    return [admission.job_id for admission in admissions if admission.job_id in moved]


def _move(admission, state: State, spec_names, borrowed: dict[int, Borrowed], names) -> tuple:
    """One admitted job's move: the job, its event's message and the fields it gets. Its
    standing in the queue goes as its status leaves *queued* (migration 0022's trigger)."""
    job = lifecycle.Moving(admission.job_id, Phase.QUEUED, state.names[admission.job_id])
    nodes = len(admission.placements)
    message = said(
        counted(
            "Admitted on %(spec)s: %(n)s node reserved.",
            "Admitted on %(spec)s: %(n)s nodes reserved.",
            "n",
        ),
        spec=spec_names.get(admission.spec_id, admission.spec_id),
        n=nodes,
    )
    lent = borrowed.get(admission.job_id)
    if lent is not None:
        message = admitted_borrowing(message, lent, names)
    fields = {
        "spec_id": admission.spec_id,
        # The pass's own moment, not the write's: a running job's end is planned from it
        # (``_running``), and the plan booked this job from ``state.now``. Stamped later,
        # the next pass would find it ending a little after what was planned, and the
        # waiting jobs' reservations would no longer hold.
        "admitted_at": moment(state.now),
        "nodes_granted": nodes,
        "borrowing": lent is not None,
        "claiming_since": None,
    }
    return job, message, fields


def ledger(holder: tuple[int, int], pool: int | None, slices: int, slots) -> dict:
    """What the ledger (SPEC G4) records of one replica's allocation: who (owner, project),
    the node's pool as it is now, and the boards held (a slice is its share of a board)."""
    owner, project = holder
    boards = (Decimal(len(slots)) / max(slices, 1)).quantize(Decimal("0.001"))
    return {"owner_id": owner, "project_id": project, "pool_id": pool, "boards": boards}
