"""What the execution tests share (no tests here): jobs that really run on the local backend
under a temporary runs folder, admitted by the real admission pass."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from jobs.admission.db import run_pass
from jobs.backend import attempt_backend
from jobs.execution import runs
from jobs.models import Attempt, Job
from resources.catalog.mounts import storage_source
from tests.helpers import wait_until
from tests.jobs.factories import JobFactory


def program(job: Job, name: str, code: str) -> Path:
    """A file of the job's algorithm (what /workspace/algorithm holds)."""
    path = storage_source(job.algorithm.path) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(code).lstrip())
    path.chmod(0o755)
    return path


def make_job(owner, project, spec, **fields) -> Job:
    """A queued job whose algorithm folder exists (empty until :func:`program` fills it)."""
    job = JobFactory(owner=owner, project=project, specs=[spec], **fields)
    storage_source(job.algorithm.path).mkdir(parents=True, exist_ok=True)
    return job


def admit_and_launch() -> list[Attempt]:
    """One admission pass and the launch of what it admitted, as the worker's task does.
    A pass is a no-op while another holds the admission lock: wait for one that ran."""
    result = wait_until(lambda: (r := run_pass()).ran and r, timeout=30, interval=0.1)
    return runs.launch(result.admitted)


def wait_for_phase(job: Job, *phases: str, timeout: float = 30) -> Job:
    """Follow the attempts (as beat's sync task does) until the job reaches one of
    ``phases``."""

    def reached():
        runs.sync()
        job.refresh_from_db()
        return job.phase in phases

    try:
        wait_until(reached, timeout, 0.2)
    except AssertionError:
        events = list(job.events.order_by("pk").values_list("message", flat=True))
        raise AssertionError(
            f"job {job.name!r} still {job.phase} ({job.reason!r}) after {timeout}s, not one of "
            f"{phases}; its events: {events}"
        ) from None
    return job


def log_of(attempt: Attempt, replica: str | None = None) -> str:
    name = replica or attempt.replicas[0]["name"]
    text, _ = attempt_backend(attempt).logs(attempt.workload_id, name, 0, 1 << 20)
    return text


def latest_step(job) -> int:
    """The last "step N/" its newest attempt's log printed (the demo algorithms' lines)."""
    attempt = job.attempts.order_by("-number").first()
    found = re.findall(r"step (\d+)/", log_of(attempt))
    return int(found[-1]) if found else 0
