"""What a job mounts, as SPEC W lays it out under /workspace (from the owner's view)."""

from __future__ import annotations

from jobs.models import Job, JobType
from resources.catalog import mounts
from resources.catalog.mounts import Mount


def job_mounts(job: Job, subtask=None) -> list[Mount]:
    """Every mount of ``job`` (of one batch sub-task, when given), sorted by target."""
    owner = job.owner
    found: list[Mount] = []
    if job.job_type == JobType.BATCH:
        task = subtask or next(iter(job.subtasks.all()), None)
        if task is not None and task.algorithm is not None:
            found.append(
                mounts.mount_algorithm(task.algorithm, owner, read_only=task.algorithm_read_only)
            )
        found.append(
            mounts.mount_outputs(
                job.output_path, job_name=job.name, index=task.index if task else 0
            )
        )
    else:
        if job.algorithm is not None:
            found.append(
                mounts.mount_algorithm(job.algorithm, owner, read_only=job.algorithm_read_only)
            )
        found.append(mounts.mount_outputs(job.output_path))
    for mount in job.datasets.select_related("version__dataset"):
        found.append(mounts.mount_dataset(mount.version, owner, read_only=mount.read_only))
    for mount in job.annotations.select_related("version__annotation_set"):
        found.append(mounts.mount_annotation(mount.version, owner))
    for mount in job.models.select_related("version__model"):
        found.append(mounts.mount_model(mount.version, owner))
    for mount in job.volumes.select_related("volume"):
        found.append(mounts.mount_volume(mount.volume, owner))
    return sorted(found, key=lambda m: m.target)
