"""Quotas mirrored as Volcano queues on each Kubernetes cluster (SPEC G1/G2 on Kubernetes;
the objects are resources.backends.kubernetes.queues'): one queue per project and per
department with a quota of boards the cluster has, the projects' under their department's.
Jobs of a project with a mirrored queue are submitted to it; the console still decides who
runs, within the same numbers.

Mirrored by beat every minute and after every quota change (resources.tasks.mirror_queues);
what the last mirror did, or why it failed, is kept on the cluster and shown with the
quotas.
"""

from __future__ import annotations

import logging
from collections import defaultdict

from django.utils import timezone

from resources import clusters
from resources.backends.base import BackendError
from resources.backends.kubernetes.queues import QueueSpec, QueueSync, queue_name, render
from resources.models import Cluster, Node, Quota

log = logging.getLogger(__name__)


def wanted(cluster: Cluster) -> list[QueueSpec]:
    """The queues the quotas ask for on ``cluster``: those of the accelerator models its
    nodes have, summed per project and per department (a maximum only when every quota of
    the holder has one)."""
    models = set(
        Node.objects.live()
        .filter(cluster=cluster, accelerator_model__isnull=False)
        .values_list("accelerator_model", flat=True)
    )
    quotas = Quota.objects.filter(accelerator_model__in=models).select_related(
        "project", "department"
    )
    guaranteed: dict[tuple, float] = defaultdict(float)
    maximum: dict[tuple, float | None] = {}
    parents: dict[tuple, str] = {}
    weight: dict[tuple, int] = defaultdict(lambda: 1)
    for quota in quotas:
        if quota.project_id:
            key = ("project", quota.project.slug)
            if quota.project.department_id:
                parents[key] = quota.project.department_id
        else:
            key = ("department", quota.department.slug)
        guaranteed[key] += float(quota.guaranteed)
        weight[key] = max(weight[key], quota.weight)
        top = None if quota.maximum is None else float(quota.maximum)
        if key not in maximum:
            maximum[key] = top
        elif maximum[key] is None or top is None:
            maximum[key] = None  # one quota without a maximum: the holder has none
        else:
            maximum[key] += top
    departments = {
        quota.department_id: queue_name("department", quota.department.slug)
        for quota in quotas
        if quota.department_id
    }
    return [
        QueueSpec(
            name=queue_name(kind, slug),
            guaranteed=guaranteed[(kind, slug)],
            maximum=maximum[(kind, slug)],
            parent=departments.get(parents.get((kind, slug)), ""),
            weight=weight[(kind, slug)],
        )
        for kind, slug in sorted(guaranteed)
    ]


def mirror(cluster: Cluster) -> QueueSync:
    """Make the cluster's console queues what the quotas say; BackendError (kept on the
    cluster) when it cannot."""
    queues = [render(spec, cluster.accelerator_resource) for spec in wanted(cluster)]
    try:
        done = clusters.backend_for(cluster).sync_queues(queues)
    except (BackendError, ValueError) as error:  # ValueError: RenderError
        Cluster.objects.filter(pk=cluster.pk).update(queues_problem=str(error)[:500])
        raise
    names = sorted(q["metadata"]["name"] for q in queues)
    # An update, not save(): the cluster's record (and so its backend) is unchanged.
    Cluster.objects.filter(pk=cluster.pk).update(
        mirrored_queues=names, queues_mirrored_at=timezone.now(), queues_problem=""
    )
    if done.created or done.updated or done.deleted:
        log.info("queues of %s: %s", cluster.name, done)
    return done


def project_queue(project, node_name: str) -> str:
    """The Volcano queue a job of ``project`` running on ``node_name`` is submitted to: the
    project's own when it is mirrored on that node's cluster, else "" (the cluster's)."""
    mirrored = (
        Node.objects.filter(name=node_name).values_list("cluster__mirrored_queues", flat=True)
    ).first()
    name = queue_name("project", project.slug)
    return name if mirrored and name in mirrored else ""
