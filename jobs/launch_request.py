"""From a saved job to the launch-plan package's LaunchRequest (the ORM stays out of it)."""

from __future__ import annotations

from console import limits
from jobs.launch import LaunchPlan, plan
from jobs.launch.request import LaunchRequest
from jobs.launch.types import port_for
from jobs.models import Job
from jobs.workspace import job_mounts


def request_for(job: Job, subtask=None, spec=None, **extra) -> LaunchRequest:
    """The request for ``job`` (one batch ``subtask``) on ``spec`` (default: the spec it runs
    on, else its first choice)."""
    spec = spec or job.spec or job.ordered_specs()[0]
    caps = limits.current()
    return LaunchRequest(
        job_name=job.name,
        mode=job.mode,
        command=subtask.command if subtask is not None else job.command,
        cpu_millicores=spec.cpu_millicores,
        memory_mib=spec.memory_mib,
        boards=float(spec.boards),
        port=port_for(job.pk),
        node_count=job.nodes,
        ps_count=job.ps_count,
        ps_cpu_millicores=caps.ps_cpu_cores * 1000,
        ps_memory_mib=caps.ps_memory_gib * 1024,
        mounts=job_mounts(job, subtask),
        output_subdir=f"{job.name}-{subtask.index}" if subtask is not None else None,
        **extra,
    )


def plan_for(job: Job, subtask=None, spec=None, **extra) -> LaunchPlan:
    if subtask is None and job.job_type == "batch":
        subtask = job.subtasks.first()
    return plan(request_for(job, subtask, spec, **extra))
