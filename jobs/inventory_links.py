"""What the resources app asks of jobs (registered in JobsConfig.ready): which live jobs
use a spec, image, node or cluster, and how many boards queued jobs wait for per model (SPEC J9)."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import F, Sum
from django.db.models.functions import Coalesce
from django.urls import reverse

from jobs.models import Attempt, Job, JobSpecChoice
from resources.models import Allocation, Cluster, Image, Node, NodeSpec
from resources.quotas import Held


def live_jobs_using(obj) -> list[tuple[str, str]]:
    if isinstance(obj, NodeSpec):
        jobs = Job.objects.live().filter(spec_choices__spec=obj).distinct()
    elif isinstance(obj, Image):
        jobs = Job.objects.live().filter(image=obj)
    elif isinstance(obj, Node):
        ids = Allocation.objects.live().filter(node=obj, holder_kind="job").values("holder_id")
        jobs = Job.objects.filter(pk__in=ids)
    elif isinstance(obj, Cluster):
        ids = Attempt.objects.filter(cluster=obj, ended_at__isnull=True).values("job_id")
        jobs = Job.objects.filter(pk__in=ids)
    else:
        return []
    return [(job.name, reverse("job_detail", args=[job.pk])) for job in jobs.only("pk", "name")]


def queued_boards_by_model() -> dict[int, float]:
    """Boards of each model the queued jobs ask for, counting each job by its first spec."""
    demand: dict[int, float] = defaultdict(float)
    rows = (
        JobSpecChoice.objects.filter(job__status="queued", order=0, spec__boards__gt=0)
        .annotate(nodes=Coalesce("job__nodes_granted", "job__nodes_asked"))
        .values_list("spec__accelerator_model_id", "spec__boards", "nodes")
    )
    for model, boards, nodes in rows:
        demand[model] += float(boards) * nodes
    return dict(demand)


def queued_boards_by_project(projects=None) -> list[Held]:
    """Boards queued jobs wait for by project, model and pool (SPEC G1's "waiting"),
    each job counted by its first spec, as :func:`queued_boards_by_model` does."""
    rows = JobSpecChoice.objects.filter(job__status="queued", order=0, spec__boards__gt=0)
    if projects is not None:
        rows = rows.filter(job__project__in=list(projects))
    rows = (
        rows.values("job__project", "spec__accelerator_model", "job__pool")
        .annotate(
            boards=Sum(F("spec__boards") * Coalesce("job__nodes_granted", "job__nodes_asked"))
        )
        .order_by()
    )
    return [
        Held(row["job__project"], row["spec__accelerator_model"], row["job__pool"], row["boards"])
        for row in rows
    ]
