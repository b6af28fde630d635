"""The one way a job becomes the scheduler's :class:`QueuedJob`, from plain named values.

Admission builds it from a job's row, the form's prediction from the form's cleaned data:
both call :func:`queued_job`, so the queue and the "what if" of the form apply the same
rules (the node count kept within the form's own limit, the elastic minimum at most the
nodes asked) and never drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable

from console.modes import MAX_NODES
from jobs.scheduling.data import NORMAL, Alternative, QueuedJob
from resources.placement.availability import demand_of


def queued_job(
    *,
    id: int,
    specs: Iterable,
    nodes_asked: int | None,
    elastic_min: int | None,
    duration_hours: float,
    submitted_at: float,
    priority: int = NORMAL,
    resubmitted: bool = False,
    node_names: Iterable[str] = (),
    pool: int | None = None,
    driver: int | None = None,
    allowed_pools: Iterable[int] = (),
    project: int | None = None,
    claiming: bool = False,
    fair: float = 0.0,
    made: dict | None = None,
) -> QueuedJob | None:
    """The job as the queue holds it; None when it has no node spec to choose.

    ``specs``: node specs (model rows) in the user's order; ``elastic_min``: the elastic
    minimum, None or 0 when the job is not elastic; ``submitted_at``: epoch seconds.
    A draft's node count may still be unchecked: it is held within 1..MAX_NODES, the form's
    own limit, so a prediction never plans for a job the form would refuse. ``made``: the
    alternatives made so far, shared by the jobs of one load (a long queue has thousands of
    jobs and a few dozen distinct alternatives; its specs must not change meanwhile).
    """
    nodes = max(1, min(nodes_asked or 1, MAX_NODES))
    minimum = min(elastic_min, nodes) if elastic_min else None
    made = {} if made is None else made
    alternatives = tuple(_alternative(spec, nodes, minimum, made) for spec in specs)
    if not alternatives:
        return None
    return QueuedJob(
        id=id,
        alternatives=alternatives,
        duration=duration_hours * 3600.0,
        priority=priority,
        resubmitted=resubmitted,
        submitted_at=submitted_at,
        node_names=frozenset(node_names),
        pool=pool,
        driver=driver,
        allowed_pools=frozenset(allowed_pools),
        project=project,
        claiming=claiming,
        fair=fair,
    )


def _alternative(spec, nodes: int, minimum: int | None, made: dict) -> Alternative:
    key = (spec.pk, nodes, minimum)
    if key not in made:
        made[key] = Alternative(spec.pk, demand_of(spec), nodes, minimum)
    return made[key]
