"""The waiting jobs as a pass reads them: each one as the scheduler's QueuedJob, with its
standing as the last pass wrote it, read again only where its row changed.

From one pass to the next most of a long queue is as it was, and reading every job whole
each time was the largest part of reading the state (0.4 s at 10,000 queued). Every row
version PostgreSQL keeps carries the transaction that wrote it (``xmin``): a job whose row
and standing row have the versions the last read saw is the job that read made, and is used
again as it was. Only the others are read whole. What a job is made of beyond its rows (the
specs' sizes, the pools its project may use) is read every time, and when any of it changed
every job is made again; a team's fair-share standing (SPEC G3) moves while its jobs run,
and is set on the jobs it moved for.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

from django.db import connection
from django.db.models import TextField
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from jobs.admission.queued import queued_job
from jobs.admission.stored import Reading
from jobs.models import Job, JobSpecChoice, Phase
from jobs.scheduling.data import QueuedJob, Reservation
from resources.models import NodeSpec

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
    "owner_id",
    "quota_since",
    "claiming_since",
    "held_before",
)
# A queued job's standing as the last pass wrote it (jobs.admission.standing.RECORD), in its
# order; its two JSON columns are read as their text (stored.Reading).
STANDING_FIELDS = ("position", "latest_start", "reason", "detail", "blockers", "reservation")
_AS_TEXT = {"detail": "detail_text", "reservation": "reservation_text"}
_READ = tuple(_AS_TEXT.get(name, f"standing__{name}") for name in STANDING_FIELDS)
# The versions of a waiting job's two rows, as text (an xid is no integer Django knows).
VERSIONS = """
    SELECT j.id, j.xmin::text, s.xmin::text
    FROM jobs_job AS j LEFT JOIN jobs_standing AS s ON s.job_id = j.id
    WHERE j.phase = %s
"""


@dataclass(frozen=True)
class Entry:
    """One waiting job as a read made it, and the versions of the rows it was made of."""

    version: tuple[str, str | None]
    queued: QueuedJob | None  # None: no spec to choose, not in the queue
    name: str
    holder: tuple[int, int]  # (owner, project)
    recorded: tuple  # its standing, in STANDING_FIELDS order
    reservation: Reservation | None  # the stored one the pass is held to
    rejoining: bool  # held at its team's quota maximum by the last pass


@dataclass(frozen=True)
class Made:
    """What every job of a read is made with beyond its own rows: when it changes, every
    job is made again. ``made``: one alternative per spec and node count, shared."""

    key: tuple
    specs: dict[int, NodeSpec]
    pools_of: defaultdict[int, frozenset[int]]
    made: dict


# The last read, per process: what it was made with and its entries by job id. Replaced
# whole at the end of a read (entries are never changed), so a read never sees half of one.
_last: tuple[Made | None, dict[int, Entry]] = (None, {})


def forget() -> None:
    global _last
    _last = (None, {})


def read_queue(fair: dict[int, float]):
    """(queue, committed, names, holders, rejoining, recorded): the waiting jobs, the stored
    reservations they are held to, their names, (owner, project), those held at a quota
    maximum by the last pass, and their standings as stored. The same as a read of every
    row (tests/jobs/test_admission_state_read.py)."""
    global _last
    made = _made()
    last_made, last = _last
    if last_made is None or last_made.key != made.key:
        last = {}
    else:
        made = last_made  # the same: its alternatives are shared on
    with connection.cursor() as cursor:
        cursor.execute(VERSIONS, [Phase.QUEUED])
        versions = cursor.fetchall()
    stale = [pk for pk, job, standing in versions
             if (entry := last.get(pk)) is None or entry.version != (job, standing)]  # fmt: skip
    fresh = _read(stale, len(versions), made, fair)
    queue, committed, names, holders, rejoining, recorded = [], {}, {}, {}, set(), {}
    entries: dict[int, Entry] = {}
    for pk, _job, _standing in versions:
        entry = fresh.get(pk) or last.get(pk)
        if entry is None:  # changed again since the versions were read: the next read has it
            continue
        entries[pk] = entry
        queued = entry.queued
        if queued is None:
            continue
        standing = fair.get(queued.project, 0.0)
        if queued.fair != standing:
            queued = replace(queued, fair=standing)
        queue.append(queued)
        names[pk], holders[pk], recorded[pk] = entry.name, entry.holder, entry.recorded
        if entry.reservation is not None:
            committed[pk] = entry.reservation
        if entry.rejoining:
            rejoining.add(pk)
    _last = (made, entries)
    return queue, committed, names, holders, rejoining, recorded


def _read(ids: list[int], total: int, made: Made, fair: dict) -> dict[int, Entry]:
    """The entries of the jobs ``ids``, read whole (the whole queue's rows when most of it
    is to be read: one scan rather than thousands of lookups)."""
    if not ids:
        return {}
    rows = Job.objects.filter(phase=Phase.QUEUED)
    chosen = JobSpecChoice.objects.filter(job__phase=Phase.QUEUED)
    if len(ids) < total // 2:
        rows, chosen = rows.filter(pk__in=ids), chosen.filter(job_id__in=ids)
    choices = _choices(chosen)
    reading = Reading()
    rows = rows.annotate(
        held_before=_held_before(),
        job_version=RawSQL("jobs_job.xmin::text", ()),
        standing_version=RawSQL("jobs_standing.xmin::text", ()),
        **{text: Cast(f"standing__{name}", TextField()) for name, text in _AS_TEXT.items()},
    )
    fields = dict.fromkeys((*QUEUE_FIELDS, *_READ, "job_version", "standing_version"))
    found = {}
    for row in rows.values(*fields):
        pk = row["pk"]
        position = row["standing__position"]
        stored, reservation = reading.reservation(pk, row["reservation_text"], position)
        # As RECORD compares them; a job without its row (none has, while queued) has none.
        recorded = (position, row["standing__latest_start"], row["standing__reason"] or "",
                    reading.detail(row["detail_text"]), row["standing__blockers"] or [],
                    stored)  # fmt: skip
        found[pk] = Entry(
            version=(row["job_version"], row["standing_version"]),
            queued=queued_of(row, made.specs, choices, made.pools_of, fair, made.made),
            name=row["name"],
            holder=(row["owner_id"], row["project_id"]),
            recorded=recorded,
            reservation=reservation,
            rejoining=row["held_before"] == "HeldForQuota",
        )
    reading.keep()
    return found


def _made() -> Made:
    specs = spec_rows()
    pools_of = project_pools()
    key = (
        tuple(sorted((pk, *_size(spec)) for pk, spec in specs.items())),
        tuple(sorted((project, *sorted(pools)) for project, pools in pools_of.items())),
    )
    return Made(key, specs, pools_of, {})


def _size(spec: NodeSpec) -> tuple:
    """What a spec's alternatives are made of (resources.placement.availability.demand_of)."""
    return (spec.cpu_millicores, spec.memory_mib, spec.boards, spec.slice_divisor,
            spec.accelerator_model_id)  # fmt: skip


def as_queued(jobs, phase: str | None, *, requeued: bool = False):
    """(row, QueuedJob) of each job of the queryset with at least one spec to choose, read
    whole; each row has QUEUE_FIELDS."""
    specs, pools_of = spec_rows(), project_pools()
    made: dict = {}
    chosen = JobSpecChoice.objects.filter(job__phase=phase) if phase else JobSpecChoice.objects
    if not phase:
        chosen = chosen.filter(job__in=jobs.values("pk"))
    choices = _choices(chosen)
    for row in jobs.annotate(held_before=_held_before()).values(*QUEUE_FIELDS):
        queued = queued_of(row, specs, choices, pools_of, {}, made, requeued)
        if queued is not None:
            yield row, queued


def _choices(chosen) -> dict[int, list[int]]:
    """Each job's specs in the order its owner chose them, from a JobSpecChoice queryset."""
    choices: dict[int, list[int]] = defaultdict(list)
    for job_id, spec_id in chosen.order_by("job_id", "order").values_list("job_id", "spec_id"):
        choices[job_id].append(spec_id)
    return choices


def _held_before():
    """The kind of a job's stored wait reason: "HeldForQuota" while the last pass held it at
    its team's quota maximum (it rejoins the queue when let in: db._rejoined)."""
    return KeyTextTransform("kind", "standing__detail")


def spec_rows() -> dict[int, NodeSpec]:
    return {spec.pk: spec for spec in NodeSpec.objects.all()}


def project_pools() -> defaultdict[int, frozenset[int]]:
    """The pools each project may use: one set per project, shared by its jobs."""
    from resources.models import ResourcePool

    pools: dict[int, set[int]] = defaultdict(set)
    for pool, project in ResourcePool.projects.through.objects.values_list(
        "resourcepool_id", "project_id"
    ):
        pools[project].add(pool)
    return defaultdict(frozenset, {project: frozenset(ids) for project, ids in pools.items()})


def queued_of(row: dict, specs, choices, pools_of, fair: dict, made: dict,
              requeued: bool = False) -> QueuedJob | None:  # fmt: skip
    """A job's row (QUEUE_FIELDS) as the queue holds it; None with no spec to choose.
    ``made``: one alternative per spec and node count, shared by the jobs of a read."""
    since = row["quota_since"]
    return queued_job(
        id=row["pk"],
        specs=(specs[spec_id] for spec_id in choices.get(row["pk"], [])),
        nodes_asked=row["nodes_asked"],
        elastic_min=row["elastic_min_nodes"],
        duration_hours=row["duration_hours"],
        # Held at its team's quota maximum, it joined the queue later (SPEC G1).
        submitted_at=max(row["submitted_at"], since or row["submitted_at"]).timestamp(),
        priority=row["priority"],
        resubmitted=row["resubmitted"] or requeued,
        node_names=row["node_names"] or (),
        pool=row["pool_id"],
        driver=row["driver_version_id"],
        allowed_pools=pools_of[row["project_id"]],
        project=row["project_id"],
        claiming=row["claiming_since"] is not None,
        fair=fair.get(row["project_id"], 0.0),
        made=made,
    )
