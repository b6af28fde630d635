"""Creating jobs and turning existing ones back into form data (clone, dev environments)."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils.translation import gettext_noop

from console.words import said
from jobs import hooks, lifecycle, operations, permissions
from jobs.forms import rows
from jobs.models import (
    Job,
    JobAnnotation,
    JobDataset,
    JobModel,
    JobSpecChoice,
    JobType,
    JobVolume,
    Priority,
    SubTask,
)
from resources.catalog import storage

JOB_FIELDS = (
    "name", "others_access", "job_type", "priority", "mode", "ps_count",
    "driver_version", "pool", "image", "output_path", "graceful_shutdown_seconds",
    "resume_enabled", "elastic_scale_up", "fault_restart_enabled", "data_prep", "debug_terminal",
    "duration_hours", "lifecycle_before_start", "lifecycle_after_stop", "hang_policy",
    "lifecycle_on_failure",
)  # fmt: skip
UNIQUE_LIVE_NAME = "job_name_unique_among_live"


class AlreadySubmitted(Exception):
    """The owner has a live job of this name: the same form submitted twice at once."""


@transaction.atomic
def create_job(
    data: dict, *, user, project, form, cloned_from: Job | None = None, via: str = ""
) -> Job:
    """Save a job from a valid form's cleaned data; it starts queued, with a first event.

    The form checked the name and the urgent cap, but a concurrent submit may have taken
    either since: raises AlreadySubmitted, or operations.UrgentCapReached, and saves nothing.
    """
    job = _unsaved_job(data, user=user, project=project, cloned_from=cloned_from)
    if job.priority == Priority.URGENT:
        operations.claim_urgent_place(project)
    _save_new(job)
    if not job.output_path:
        # A folder of its own by default: no job finds another's checkpoints by accident.
        job.output_path = storage.job_output_folder(user, job.name, job.pk)
        Job.objects.filter(pk=job.pk).update(output_path=job.output_path)
    _save_choices(job, data, form)
    permissions.grant(job)
    words = (
        gettext_noop("Submitted by %(user)s through the API: waiting in the queue.")
        if via == "api"
        else gettext_noop("Submitted by %(user)s: waiting in the queue.")
    )
    lifecycle.record(job, said(words, user=user), actor=user)
    transaction.on_commit(hooks.queue_changed)
    return job


def _unsaved_job(data: dict, *, user, project, cloned_from: Job | None) -> Job:
    """The job's own fields from the cleaned data, each option's settings only when the
    option is on."""
    job = Job(owner=user, project=project, cloned_from=cloned_from)
    for name in JOB_FIELDS:
        setattr(job, name, data.get(name))
    job.ps_count = data.get("ps_count") or 0
    job.hang_policy = data.get("hang_policy") or ""
    job.nodes_asked = data.get("node_count")
    job.node_names = [node.name for node in data.get("node_names") or []]
    job.max_resumes = (data.get("max_resumes") or 0) if job.resume_enabled else 0
    job.elastic_min_nodes = data.get("elastic_min_nodes") if data.get("elastic") else None
    job.elastic_scale_up = bool(data.get("elastic") and data.get("elastic_scale_up"))
    if data.get("perf_detection"):
        job.perf_threshold, job.perf_policy = data.get("perf_threshold"), data.get("perf_policy")
    job.max_restarts = (data.get("max_restarts") or 0) if job.fault_restart_enabled else 0
    job.notify_on = _told(data.get("notify_on"), user)
    if job.job_type == JobType.REGULAR:
        job.algorithm = data.get("algorithm")
        job.algorithm_read_only = bool(data.get("algorithm_read_only"))
        job.command = data.get("command", "")
    return job


def _told(chosen, user) -> list[str] | None:
    """What the job's owner is told of it: None (their defaults, as they change) unless the
    form says otherwise."""
    from jobs.forms.job import told_by_default

    if chosen is None or sorted(chosen) == sorted(told_by_default(user)):
        return None
    return list(chosen)


def _save_choices(job: Job, data: dict, form) -> None:
    """The saved job's rows of its own: specs in order, sub-tasks, datasets, annotations,
    models and volumes."""
    JobSpecChoice.objects.bulk_create(
        JobSpecChoice(job=job, spec=spec, order=i) for i, spec in enumerate(data["specs"])
    )
    if job.job_type == JobType.BATCH:
        SubTask.objects.bulk_create(
            SubTask(
                job=job,
                index=i,
                algorithm=data.get(rows.SUBTASKS.name(i, "algorithm")),
                algorithm_read_only=bool(data.get(rows.SUBTASKS.name(i, "algorithm_read_only"))),
                command=data.get(rows.SUBTASKS.name(i, "command"), "").strip(),
            )
            for i in range(form.subtask_count)
        )
    JobDataset.objects.bulk_create(
        JobDataset(
            job=job,
            version=data[rows.DATASETS.name(i, "version")],
            read_only=bool(data.get(rows.DATASETS.name(i, "read_only"))),
        )
        for i in range(form.dataset_count)
    )
    JobAnnotation.objects.bulk_create(
        JobAnnotation(job=job, version=v) for v in data.get("annotations") or []
    )
    JobModel.objects.bulk_create(JobModel(job=job, version=v) for v in data.get("models") or [])
    JobVolume.objects.bulk_create(JobVolume(job=job, volume=v) for v in data.get("volumes") or [])


def _save_new(job: Job) -> None:
    try:
        with transaction.atomic():
            job.save()
    except IntegrityError as exc:
        diag = getattr(exc.__cause__, "diag", None)
        if getattr(diag, "constraint_name", None) != UNIQUE_LIVE_NAME:
            raise
        raise AlreadySubmitted(job.name) from None


def initial_from_job(job: Job, *, resume: bool = False) -> dict:
    """The form's data for a copy of ``job`` (clone, SPEC O3). The copy writes to a new
    folder of its own, unless ``resume``: then it continues in ``job``'s output folder, from
    the checkpoints there — on purpose, never by accident."""
    initial = {name: getattr(job, name) for name in JOB_FIELDS}
    initial["node_count"] = job.nodes  # the form's field, as the page has always named it
    initial["output_path"] = job.output_path if resume else ""
    for name in ("driver_version", "pool", "image"):
        initial[name] = getattr(job, f"{name}_id")
    initial.update(
        name=f"{job.name}-copy"[:40],
        algorithm=job.algorithm_id,
        algorithm_read_only=job.algorithm_read_only,
        command=job.command,
        specs=[choice.spec_id for choice in job.spec_choices.all()],
        node_names=list(job.node_names),
        max_resumes=job.max_resumes or None,
        elastic=job.elastic_min_nodes is not None,
        elastic_min_nodes=job.elastic_min_nodes,
        perf_detection=job.perf_threshold is not None,
        perf_threshold=job.perf_threshold,
        perf_policy=job.perf_policy,
        max_restarts=job.max_restarts or None,
        **({"notify_on": list(job.notify_on)} if job.notify_on is not None else {}),
        annotations=[a.version_id for a in job.annotations.all()],
        models=[m.version_id for m in job.models.all()],
        volumes=[v.volume_id for v in job.volumes.all()],
    )
    subtasks = list(job.subtasks.all())
    initial[rows.SUBTASKS.count_field()] = len(subtasks) if subtasks else rows.SUBTASKS.minimum
    for task in subtasks:
        initial[rows.SUBTASKS.name(task.index, "algorithm")] = task.algorithm_id
        initial[rows.SUBTASKS.name(task.index, "algorithm_read_only")] = task.algorithm_read_only
        initial[rows.SUBTASKS.name(task.index, "command")] = task.command
    datasets = list(job.datasets.all())
    initial[rows.DATASETS.count_field()] = len(datasets)
    for i, mount in enumerate(datasets):
        initial[rows.DATASETS.name(i, "version")] = mount.version_id
        initial[rows.DATASETS.name(i, "read_only")] = mount.read_only
    return initial
