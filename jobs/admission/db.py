"""The thin database layer around the pure core: load, run one pass, write decisions back.

One admission pass at a time, cluster-wide: a PostgreSQL advisory lock is taken without
waiting, so a concurrent or duplicate pass is a no-op. Each admission is its own transaction:
the job's move to *admitted* (a conditional UPDATE) and its allocation rows commit together
or not at all.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone, translation

from console.celery import send
from console.words import counted, said
from jobs import lifecycle
from jobs.admission.queued import queued_job
from jobs.admission.words import Names, say, to_json
from jobs.models import Job, JobSpecChoice, Phase, Status
from jobs.scheduling import passes
from jobs.scheduling.data import (
    Placement,
    QueuedJob,
    Reservation,
    RunningJob,
    SchedNode,
)
from resources.models import Allocation, Node, NodeSpec
from resources.placement.capacity import NodeState

log = logging.getLogger(__name__)

# pg advisory lock key of the admission pass ("adm" in ASCII).
LOCK_KEY = 0x61646D


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


QUEUE_FIELDS = (
    "pk",
    "name",
    "priority",
    "resubmitted",
    "submitted_at",
    "duration_hours",
    "nodes_asked",
    "elastic_min_nodes",
    "node_names",
    "pool_id",
    "driver_version_id",
    "project_id",
    "reservation",
)


def _queue() -> tuple[list[QueuedJob], dict[int, Reservation], dict[int, str]]:
    queue, committed, names = [], {}, {}
    rows = Job.objects.filter(phase=Phase.QUEUED)
    for row, queued in _as_queued(rows, Phase.QUEUED):
        queue.append(queued)
        names[row["pk"]] = row["name"]
        if row["reservation"]:
            committed[row["pk"]] = _reservation_from_json(row["pk"], row["reservation"])
    return queue, committed, names


def requeued(jobs) -> dict[int, QueuedJob]:
    """Running jobs as the queue would hold them once requeued after an interruption
    (jobs.faults.recovery.requeue): resubmitted, asking again for the nodes it asked for."""
    return {row["pk"]: queued for row, queued in _as_queued(jobs, None, requeued=True)}


def _as_queued(jobs, phase: str | None, *, requeued: bool = False):
    """(row, QueuedJob) of each job of the queryset with at least one spec to choose."""
    from resources.models import ResourcePool

    pools_of: dict[int, set[int]] = defaultdict(set)
    for pool, project in ResourcePool.projects.through.objects.values_list(
        "resourcepool_id", "project_id"
    ):
        pools_of[project].add(pool)
    specs = {spec.pk: spec for spec in NodeSpec.objects.all()}
    choices: dict[int, list[int]] = defaultdict(list)
    chosen = JobSpecChoice.objects.filter(job__phase=phase) if phase else JobSpecChoice.objects
    if not phase:
        chosen = chosen.filter(job__in=jobs.values("pk"))
    for job_id, spec_id in chosen.order_by("job_id", "order").values_list("job_id", "spec_id"):
        choices[job_id].append(spec_id)
    for row in jobs.values(*QUEUE_FIELDS):
        queued = queued_job(
            id=row["pk"],
            specs=(specs[spec_id] for spec_id in choices.get(row["pk"], [])),
            nodes_asked=row["nodes_asked"],
            elastic_min=row["elastic_min_nodes"],
            duration_hours=row["duration_hours"],
            submitted_at=epoch(row["submitted_at"]),
            priority=row["priority"],
            resubmitted=row["resubmitted"] or requeued,
            node_names=row["node_names"] or (),
            pool=row["pool_id"],
            driver=row["driver_version_id"],
            allowed_pools=pools_of[row["project_id"]],
        )
        if queued is not None:
            yield row, queued


def _reservation_to_json(reservation: Reservation) -> dict:
    return {
        "start": reservation.start,
        "end": reservation.end,
        "spec": reservation.spec_id,
        "placements": [[p.node_id, p.cpu, p.memory, list(p.slots)] for p in reservation.placements],
        "blockers": list(reservation.blockers),
        "position": reservation.position,
    }


def _reservation_from_json(job_id: int, data: dict) -> Reservation:
    return Reservation(
        job_id=job_id,
        position=data.get("position", 0),
        start=data.get("start"),
        end=data.get("end"),
        spec_id=data.get("spec"),
        placements=tuple(Placement(n, c, m, tuple(s)) for n, c, m, s in data.get("placements", [])),
        reason=None,
        blockers=tuple(data.get("blockers", ())),
    )


def load(now: datetime | None = None) -> State:
    now_seconds = epoch(now or timezone.now())
    nodes, states = _nodes()
    running = _running(now_seconds, states)
    queue, committed, names = _queue()
    return State(now_seconds, nodes, running, queue, committed, names)


@dataclass
class PassResult:
    ran: bool
    admitted: list[int] = field(default_factory=list)
    queued: int = 0


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


def ask_for_pass() -> None:
    """Ask the worker for an admission pass soon (after the current transaction commits):
    the queue or the inventory changed."""
    transaction.on_commit(lambda: send("jobs.tasks.admit"))


def run_pass(now: datetime | None = None) -> PassResult:
    """One admission pass; a no-op (``ran=False``) while another pass holds the lock."""
    if connection.in_atomic_block:
        raise RuntimeError("an admission pass commits as it goes: call it outside a transaction")
    if not _try_lock():
        return PassResult(ran=False)
    # Stored texts (events, reasons) are in the site's language, whoever triggered the pass.
    language = translation.get_language()
    translation.activate(settings.LANGUAGE_CODE)
    try:
        state = load(now)
        result = passes.schedule(
            state.nodes, state.running, state.queue, state.now, state.committed
        )
        spec_names = dict(NodeSpec.objects.values_list("pk", "name"))
        admitted = [a.job_id for a in result.admissions if _admit(a, state, spec_names)]
        _record(result.reservations, state, admitted)
        return PassResult(ran=True, admitted=admitted, queued=len(state.queue) - len(admitted))
    finally:
        translation.activate(language) if language else translation.deactivate()
        _unlock()


@transaction.atomic
def _admit(admission, state: State, spec_names: dict[int, str]) -> bool:
    """The job's move to admitted and its allocations, in one transaction.

    The move is a conditional UPDATE from *queued*: a job stopped or deleted since the pass
    loaded it is left alone, and nothing is allocated for it.
    """
    job = Job(pk=admission.job_id, phase=Phase.QUEUED, name=state.names[admission.job_id])
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
    moved = lifecycle.move(
        job,
        Phase.ADMITTED,
        message,
        spec_id=admission.spec_id,
        # The pass's own moment, not the write's: a running job's end is planned from it
        # (``_running``), and the plan booked this job from ``state.now``. Stamped later, the
        # next pass would find it ending a little after what was planned, and the waiting
        # jobs' reservations would no longer hold.
        admitted_at=moment(state.now),
        nodes_granted=nodes,
        queue_position=None,
        latest_start=None,
        wait_reason="",
        wait_detail=None,
        blockers=[],
        reservation=None,
    )
    if not moved:
        return False
    Allocation.objects.bulk_create(
        Allocation(
            node_id=placement.node_id,
            holder_kind=Allocation.Holder.JOB,
            holder_id=job.pk,
            label=job.name,
            replica=f"worker-{index}",
            cpu_millicores=placement.cpu,
            memory_mib=placement.memory,
            slots=list(placement.slots),
        )
        for index, placement in enumerate(admission.placements)
    )
    return True


def _record(reservations: dict[int, Reservation], state: State, admitted: list[int]) -> None:
    """Write each queued job's position, latest start, reason, blockers and reservation.

    One UPDATE ... FROM unnest(...) for the whole queue (row-by-row updates would cost more
    than the pass itself), which touches only the jobs whose standing changed: a pass that
    changes nothing writes nothing, and so logs no change of the queue (migration 0014) that
    would make the form's prediction plan it all again.
    """
    import json

    done = set(admitted)
    names = Names()
    # Positions among the jobs still waiting: the admitted ones have left the queue.
    waiting = sorted(
        (r for job_id, r in reservations.items() if job_id not in done),
        key=lambda r: r.position,
    )
    if not waiting:
        return
    ids, positions, starts, reasons, details, blockers, stored = [], [], [], [], [], [], []
    for position, reservation in enumerate(waiting, start=1):
        ids.append(reservation.job_id)
        positions.append(position)
        starts.append(moment(reservation.start))
        reasons.append(say(reservation.reason, names)[:500] if reservation.reason else "")
        details.append(json.dumps(to_json(reservation.reason)))
        blockers.append(json.dumps(list(reservation.blockers)))
        stored.append(
            json.dumps(_reservation_to_json(reservation)) if reservation.start is not None else None
        )
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE jobs_job SET
                queue_position = v.position,
                latest_start = v.start,
                wait_reason = v.reason,
                wait_detail = v.detail,
                blockers = v.blockers,
                reservation = v.stored
            FROM (
                SELECT id, position, start, reason, detail, stored,
                       ARRAY(SELECT jsonb_array_elements_text(blocking)::bigint) AS blockers
                FROM unnest(%s::bigint[], %s::integer[], %s::timestamptz[], %s::text[],
                            %s::jsonb[], %s::jsonb[], %s::jsonb[])
                     AS u(id, position, start, reason, detail, blocking, stored)
            ) AS v
            WHERE jobs_job.id = v.id AND jobs_job.phase = %s
              AND (jobs_job.queue_position, jobs_job.latest_start, jobs_job.wait_reason,
                   jobs_job.wait_detail, jobs_job.blockers, jobs_job.reservation)
                  IS DISTINCT FROM (v.position, v.start, v.reason, v.detail, v.blockers, v.stored)
            """,
            [ids, positions, starts, reasons, details, blockers, stored, Phase.QUEUED],
        )
