"""The one way to a job's workload, wherever it runs: the backend its attempt runs on, and
stopping it. Execution, faults, tools and pages all come here (never the other way)."""

from __future__ import annotations

from console.celery import send
from jobs.models import Attempt
from resources.clusters import backend_of


def attempt_backend(attempt: Attempt | None = None):
    """The backend an attempt runs on: its cluster's, or the local backend."""
    return backend_of(attempt.cluster_id if attempt is not None else None)


def stop_attempt(attempt: Attempt, seconds: int) -> None:
    """Stop an attempt's workload: on this machine at once; on a cluster through the
    worker, since a cluster may be slow to answer, unless the broker cannot take the task
    just now (the stop must not be lost)."""
    if attempt.cluster_id is None or not send(
        "jobs.tasks.stop_workload", attempt.workload_id, attempt.cluster_id, seconds
    ):
        attempt_backend(attempt).stop(attempt.workload_id, seconds)
