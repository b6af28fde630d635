"""The scheduling state as admission reads it from the database: nodes, running jobs and the
queue, as the pure core's plain data (jobs.scheduling.data), and the stored reservations
the next pass is held to.

A pass and the form's prediction read it under one snapshot (:func:`load_consistent`) and
keep what their plan rests on (:class:`Seen`): it holds until something they read changed
(:func:`unchanged_since`) or a start or an end of the plan comes.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from math import inf

from django.db import OperationalError, connection, transaction
from django.utils import timezone

from jobs.admission.caps import load_caps
from jobs.admission.fairness import standings
from jobs.admission.queue_read import as_queued, read_queue
from jobs.models import Job, Status
from jobs.scheduling.data import (
    Placement,
    QueuedJob,
    Reservation,
    RunningJob,
    SchedNode,
)
from jobs.scheduling.quotas import Cap
from resources.models import Allocation, Node
from resources.placement.capacity import NodeState


def epoch(moment: datetime) -> float:
    return moment.timestamp()


def moment(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, tz=UTC)


@dataclass
class State:
    now: float
    nodes: list[SchedNode]
    running: list[RunningJob]
    queue: list[QueuedJob]
    committed: dict[int, Reservation]
    names: dict[int, str] = field(default_factory=dict)  # job id -> name
    # job id -> (owner id, project id): what the ledger records of an admission (SPEC G4)
    holders: dict[int, tuple[int, int]] = field(default_factory=dict)
    # The quota maximums (SPEC G1), the eighths of boards each cap's projects hold now, and
    # the jobs the last pass held at one: if let in now, they join the queue now.
    caps: list[Cap] = field(default_factory=list)
    used: dict[int, int] = field(default_factory=dict)
    rejoining: frozenset[int] = frozenset()
    # Each project's fair-share standing (SPEC G3), which its queued jobs carry.
    fair: dict[int, float] = field(default_factory=dict)
    # job id -> its standing as stored (STANDING_FIELDS): a pass writes only what changed.
    recorded: dict[int, tuple] = field(default_factory=dict)

    def plan(self, make, **kwargs):
        """``make`` (passes.schedule or passes.replay) over this state, quotas included."""
        result = make(
            self.nodes, self.running, self.queue, self.now, self.committed,
            caps=self.caps, used=self.used, rejoining=self.rejoining, **kwargs,
        )  # fmt: skip
        result.fair = dict(self.fair)
        return result


NODE_FIELDS = (
    "pk",
    "name",
    "cpu_millicores",
    "memory_mib",
    "board_count",
    "slices_per_board",
    "accelerator_model_id",
    "pool_id",
    "driver_version_id",
)


def sched_nodes(nodes) -> list[SchedNode]:
    """The scheduler's view of a queryset of nodes, idle (their capacity only)."""
    return [
        SchedNode(NodeState(pk, name, cpu, memory, boards, slices, model), pool, driver)
        for pk, name, cpu, memory, boards, slices, model, pool, driver in nodes.values_list(
            *NODE_FIELDS
        )
    ]


def _nodes() -> tuple[list[SchedNode], dict[int, NodeState]]:
    nodes = sched_nodes(Node.objects.schedulable())
    return nodes, {node.state.id: node.state for node in nodes}


def _running(now: float, states: dict[int, NodeState]) -> list[RunningJob]:
    """Jobs holding resources, with when they end at the latest; other holders (development
    environments...) count as node usage with no known end."""
    holders = {}
    for pk, deadline, admitted, started, hours in Job.objects.filter(
        status=Status.RUNNING
    ).values_list("pk", "deadline", "admitted_at", "started_at", "duration_hours"):
        start = started or admitted or timezone.now()
        end = deadline or (start + timezone.timedelta(hours=hours))
        holders[pk] = epoch(end)
    holdings: dict[int, list[Placement]] = defaultdict(list)
    for node_id, kind, holder, cpu, memory, slots in Allocation.objects.live().values_list(
        "node_id", "holder_kind", "holder_id", "cpu_millicores", "memory_mib", "slots"
    ):
        if kind == Allocation.Holder.JOB and holder in holders:
            if node_id in states:
                holdings[holder].append(Placement(node_id, cpu, memory, tuple(slots)))
        elif node_id in states:
            state = states[node_id]
            state.cpu_used += cpu
            state.memory_used += memory
            state.used_slots.update(slots)
    return [RunningJob(pk, max(end, now), tuple(holdings[pk])) for pk, end in holders.items()]


def requeued(jobs) -> dict[int, QueuedJob]:
    """Running jobs as the queue would hold them once requeued after an interruption
    (jobs.faults.recovery.requeue): resubmitted, asking again for the nodes it asked for."""
    return {row["pk"]: queued for row, queued in as_queued(jobs, None, requeued=True)}


def load(now: datetime | None = None) -> State:
    now_seconds = epoch(now or timezone.now())
    nodes, states = _nodes()
    running = _running(now_seconds, states)
    fair = standings(now or timezone.now())
    queue, committed, names, holders, rejoining, recorded = read_queue(fair)
    caps, used = load_caps()
    return State(
        now_seconds, nodes, running, queue, committed, names, holders, caps, used,
        frozenset(rejoining), fair, recorded,
    )  # fmt: skip


def load_consistent(now: datetime | None = None) -> tuple[State, str, int]:
    """The scheduling state under one snapshot, that snapshot, and the newest entry of the
    queue's change log (jobs_queue_change, written by database triggers) it saw.

    REPEATABLE READ makes every query of ``load`` see the same moment, so the state is one
    state of the cluster and the snapshot names exactly which one (inside a test's
    transaction the isolation level is already set: its own snapshot rules). A read that
    waits on a lock gives up after a moment and is tried again."""
    for attempt in range(3):
        try:
            return _read(now)
        except OperationalError:
            if attempt == 2 or connection.in_atomic_block:
                raise
            time.sleep(0.2)
    raise AssertionError("unreachable")


@contextmanager
def one_snapshot(*, give_up: bool = False):
    """A transaction whose reads all see one moment (REPEATABLE READ; inside a test's
    transaction the isolation level is already set: its own snapshot rules). ``give_up``:
    a read waiting on a lock fails after a moment, for the caller to try again."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                if give_up:
                    # Reading many tables in one transaction must never wait long behind
                    # an exclusive lock (a migration, a TRUNCATE): give up before the
                    # server's deadlock check would pick the other side.
                    cursor.execute("SET LOCAL lock_timeout = '500ms'")
        yield


def _read(now: datetime | None) -> tuple[State, str, int]:
    with one_snapshot(give_up=True):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_current_snapshot()::text, coalesce(max(id), 0) FROM jobs_queue_change"
            )
            snapshot, last = cursor.fetchone()
        return load(now), snapshot, last


def unchanged_since(snapshot: str, last_change: int, own: tuple[str, ...] = ()) -> bool:
    """Nothing a plan depends on changed since ``snapshot`` (one query): no change newer
    than the last it saw, and none by a transaction that had not committed then, except
    those of the ``own`` transactions (the writes of the pass that made the plan, which the
    plan already holds)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM jobs_queue_change WHERE (id > %s"
            " OR NOT pg_visible_in_snapshot(xid, %s::pg_snapshot))"
            " AND xid <> ALL(%s::text[]::xid8[]))",
            [last_change, snapshot, list(own)],
        )
        return cursor.fetchone()[0]


@dataclass(frozen=True)
class Seen:
    """The state a plan was made of: the snapshot it was read under, the newest change it
    saw, its moment, and when the plan changes by itself (a reservation starts, a running
    job reaches its end). Until then, and while nothing it was read from changed, the
    plan is still the one a pass would make: time alone changes nothing else.

    ``own``: the transactions that wrote the plan's own decisions (an admission pass's
    admissions and standings, ids as text): the plan already holds what they changed."""

    snapshot: str
    last_change: int
    now: float
    due: float
    own: tuple[str, ...] = ()

    def holds(self, now: float) -> bool:
        """Whether a plan of this state is still the plan at ``now`` (one query)."""
        return self.now <= now < self.due and unchanged_since(
            self.snapshot, self.last_change, self.own
        )


def seen(
    state: State,
    snapshot: str,
    last_change: int,
    reservations: Mapping[int, Reservation],
    overdue_for: float,
    own: tuple[str, ...] = (),
) -> Seen:
    """What a plan of ``state`` (its ``reservations``) rests on. ``overdue_for``: how long
    it holds while a running job is past its end; such a job, being stopped, is planned to
    leave a minute after the plan's moment, whatever that moment is."""
    now = state.now
    later = [r.start for r in reservations.values() if r.start is not None and r.start > now]
    # A job the plan starts now runs from now on: its end is a change like a running job's.
    later += [r.end for r in reservations.values() if r.start == now and r.end is not None]
    later += [job.ends_at for job in state.running if job.ends_at > now]
    due = min(later, default=inf)
    if any(job.ends_at <= now for job in state.running):
        due = min(due, now + overdue_for)
    return Seen(snapshot, last_change, now, due, own)
