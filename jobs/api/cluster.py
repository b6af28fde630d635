"""/api/v1/availability, /pools, /images and /catalog/{kind}: what a job can be made of and
where it could start now (SPEC I1), as /cluster/, the job form and /catalog/ read them."""

from __future__ import annotations

from django.http import Http404
from django.utils.translation import gettext_noop
from ninja import Query, Router, Schema

from jobs.api.forms import project_of
from jobs.forms import choices
from resources.catalog.kinds import KINDS
from resources.inventory import runtimes
from resources.placement import availability

router = Router(tags=["cluster"])


class Place(Schema):
    pool: str | None  # None: the shared nodes
    never: str  # why a job of this spec could never start there ("" if it could)
    now: int  # replicas that fit at once now: a job of up to this many nodes starts now
    nodes: int  # machines with room for at least one replica now


class SpecOut(Schema):
    name: str
    cpu_millicores: int
    memory_mib: int
    boards: float
    accelerator: str | None
    largest_job_now: int
    places: list[Place]


class AvailabilityParams(Schema):
    spec: list[str] = []
    project: str | None = None


class PoolOut(Schema):
    name: str
    description: str
    projects: list[str]


class ImageOut(Schema):
    name: str
    reference: str
    runs_here: bool  # a local runtime of it is ready (the local backend's nodes)
    why_not: str


class ItemOut(Schema):
    id: int
    name: str
    owner: str
    project: str | None
    versions: list[str]


@router.get("/availability", response=list[SpecOut],
            summary=gettext_noop("Where each spec could start now"))  # fmt: skip
def where_now(request, params: Query[AvailabilityParams]):
    project = project_of(request, params.project) if request.user.is_authenticated else None
    ids = list(choices.specs().filter(name__in=params.spec).values_list("pk", flat=True))
    if params.spec and not ids:
        return []
    found = availability.compute(request.user, project, spec_ids=ids)
    return [
        {
            "name": s.spec.name, "cpu_millicores": s.spec.cpu_millicores,
            "memory_mib": s.spec.memory_mib, "boards": float(s.spec.boards),
            "accelerator": s.spec.accelerator_model.name if s.spec.accelerator_model else None,
            "largest_job_now": s.largest_job,
            "places": [{"pool": a.pool.name if a.pool else None, "never": a.never,
                        "now": a.now, "nodes": a.nodes} for a in s.answers],
        }
        for s in found.summaries
    ]  # fmt: skip


@router.get("/pools", response=list[PoolOut],
            summary=gettext_noop("The dedicated pools your projects may use"))  # fmt: skip
def pools(request):
    from resources.models import ResourcePool

    rows = ResourcePool.objects.live().prefetch_related("projects").order_by("name")
    if not request.user.is_staff:
        rows = rows.filter(projects__memberships__user=request.user).distinct()
    return [{"name": p.name, "description": p.description,
             "projects": sorted(x.slug for x in p.projects.all())} for p in rows]  # fmt: skip


@router.get("/images", response=list[ImageOut], summary=gettext_noop("The images jobs run in"))
def images(request):
    found = []
    for image in choices.images().order_by("name"):
        problem = runtimes.local_problem(image) or ""
        found.append({"name": image.name, "reference": image.reference,
                      "runs_here": not problem, "why_not": str(problem)})  # fmt: skip
    return found


@router.get(
    "/catalog/{kind}",
    response=list[ItemOut],
    summary=gettext_noop("What you may use in a job, of one kind"),
    description=gettext_noop(
        "`kind`: datasets, annotations, algorithms, models or volumes; the first 1,000 by name."
    ),
)
def catalog(request, kind: str):
    found = KINDS.get(kind)
    if found is None:
        raise Http404
    rows = found.model.objects.visible_to(request.user).select_related("owner", "project")
    versioned = found.versioned
    if versioned:
        rows = rows.prefetch_related("versions")
    return [
        {"id": item.pk, "name": item.name, "owner": item.owner.get_username(),
         "project": item.project.slug if item.project else None,
         "versions": [v.name for v in item.versions.all()] if versioned else []}
        for item in rows.order_by("name", "pk")[:1000]
    ]  # fmt: skip
