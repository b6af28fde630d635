"""From a saved job, its allocations and its launch plan to a backend Workload."""

from __future__ import annotations

from dataclasses import replace

from django.conf import settings

from console import limits
from jobs.faults import prechecks
from jobs.launch_request import plan_for
from jobs.models import Job
from resources.backends.base import (
    DEFAULT_PATH,
    LifecycleScripts,
    PreparedData,
    Workload,
)
from resources.catalog import storage
from resources.catalog.mounts import MountKind
from resources.inventory import identity, runtimes
from resources.models import Allocation
from resources.queue_mirror import project_queue


def workload_id(job: Job, number: int) -> str:
    return f"job-{job.pk}-{number}"


def placements(job: Job) -> list[tuple[str, tuple[int, ...]]]:
    """(node name, physical board indexes) per worker, in worker order."""
    rows = (
        Allocation.objects.live()
        .filter(holder_kind=Allocation.Holder.JOB, holder_id=job.pk)
        .select_related("node")
        .order_by("id")
    )
    by_replica = {}
    for row in rows:
        slices = max(1, row.node.slices_per_board)
        boards = tuple(sorted({slot // slices for slot in row.slots}))
        by_replica[row.replica] = (row.node.name, boards)
    return [by_replica[name] for name in sorted(by_replica, key=_worker_index)]


def _path(job: Job) -> str:
    """PATH with the image's runtime first (the local backend's image -> runtime setting);
    empty: the backend's own default."""
    entries = runtimes.path_entries(job.image) if job.image_id else []
    return ":".join([*entries, DEFAULT_PATH]) if entries else ""


def _gang(job: Job, replicas: int, workers: int) -> int:
    """How many replicas must start together: all of them, or with an elastic minimum that
    many workers and every parameter server."""
    if job.elastic_min_nodes and job.elastic_min_nodes < workers:
        return job.elastic_min_nodes + (replicas - workers)
    return replicas


def _worker_index(replica: str) -> int:
    return int(replica.rsplit("-", 1)[-1]) if replica.rsplit("-", 1)[-1].isdigit() else 0


def build(job: Job, number: int, subtask=None) -> Workload:
    """The workload of attempt ``number``; ValueError when the job cannot be launched as it
    is (no allocation, a plan the launch rules refuse)."""
    try:
        # Checked at submit, and again now: sharing may have been withdrawn meanwhile.
        storage.check_writable(job.owner, job.output_path)
    except storage.NotYours:
        raise ValueError(
            f"{job.owner.get_username()} may not write to the output folder {job.output_path}"
        ) from None
    placed = placements(job)
    if not placed:
        raise ValueError("no node is reserved for the job")
    plan = plan_for(job, subtask)
    replicas = _replicas(plan, placed, _path(job))
    workload = Workload(
        id=workload_id(job, number),
        replicas=replicas,
        graceful_seconds=job.graceful_shutdown_seconds,
        wait_for_peers=plan.wait_for_peers,
        peer_timeout_seconds=settings.PEER_TIMEOUT_SECONDS,
        run_as=identity.run_as_for(job.owner),
        image=job.image.reference if job.image_id else "",
        labels={
            "console.io/job": str(job.pk),
            "console.io/attempt": str(number),
            "console.io/owner": str(job.owner_id),
        },
        min_available=_gang(job, len(replicas), len(placed)),
        queue=project_queue(job.project, placed[0][0]),
        prepare_data=_prepared(job, plan),
        scripts=LifecycleScripts(
            before_start=job.lifecycle_before_start.strip(),
            after_stop=job.lifecycle_after_stop.strip(),
            on_failure=job.lifecycle_on_failure.strip(),
            timeout_seconds=limits.current().lifecycle_script_timeout_seconds,
        ),
    )
    # What a backend that checks in the workload asks of each node (SPEC F1; the local
    # backend's are run by the console before the start, and it ignores these).
    return replace(workload, prechecks=prechecks.asked(workload))


def _replicas(plan, placed: list[tuple[str, tuple[int, ...]]], path: str) -> tuple:
    """Each replica of the plan on its node: worker i on the i-th reservation, with its
    boards; parameter servers share the workers' nodes (seed 001), holding no board."""
    workers = [r for r in plan.replicas if r.role == "worker"]
    if len(workers) != len(placed):
        raise ValueError(f"workers planned: {len(workers)}; nodes reserved: {len(placed)}")
    return tuple(
        replica.placed(*placed[replica.index], path=path)
        if replica.role == "worker"
        else replica.placed(placed[replica.index % len(placed)][0], path=path)
        for replica in plan.replicas
    )


def _prepared(job: Job, plan) -> tuple[PreparedData, ...]:
    """SPEC J19: the datasets to copy to each node first, when the job asks for it. Only
    read-only dataset mounts (the form requires every dataset read-only then)."""
    if not job.data_prep:
        return ()
    found = {}
    for replica in plan.replicas:
        for mount in replica.mounts:
            if getattr(mount, "kind", "") == MountKind.DATASET and mount.read_only:
                found[str(mount.target)] = PreparedData(
                    source=str(mount.source), target=str(mount.target), label=mount.label
                )
    return tuple(found[target] for target in sorted(found))


def cluster_of(job: Job) -> int | None:
    """The cluster the job's nodes are in (None: the local backend); ValueError when they
    lie in more than one, which no launch can span."""
    found = set(
        Allocation.objects.live()
        .filter(holder_kind=Allocation.Holder.JOB, holder_id=job.pk)
        .values_list("node__cluster_id", flat=True)
    )
    if len(found) > 1:
        raise ValueError("its nodes lie in more than one cluster: a job runs on one")
    return found.pop() if found else None
