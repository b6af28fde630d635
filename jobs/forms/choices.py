"""What a user may pick in the job form: catalog items, specs, images, nodes, pools."""

from __future__ import annotations

from django.db.models import Q

from console.sharing import Access
from resources.inventory import runtimes
from resources.models import (
    AcceleratorModel,
    Algorithm,
    AnnotationVersion,
    DatasetVersion,
    DriverVersion,
    Image,
    ModelVersion,
    Node,
    NodeSpec,
    ResourcePool,
    Volume,
)
from resources.placement.availability import usable_nodes


def algorithms(user):
    return Algorithm.objects.visible_to(user).select_related("owner").order_by("name")


def dataset_versions(user):
    """Versions of the user's own datasets and of their favourites (SPEC J5)."""
    from resources.models import Dataset

    datasets = Dataset.objects.visible_to(user).filter(Q(owner=user) | Q(favourited_by=user))
    return (
        DatasetVersion.objects.filter(dataset__in=datasets.values("pk"))
        .select_related("dataset", "dataset__owner")
        .order_by("dataset__name", "-created_at")
    )


def annotation_versions(user):
    from resources.models import AnnotationSet

    sets = AnnotationSet.objects.visible_to(user).values("pk")
    return (
        AnnotationVersion.objects.filter(annotation_set__in=sets)
        .select_related("annotation_set")
        .order_by("annotation_set__name", "-created_at")
    )


def model_versions(user):
    from resources.models import TrainedModel

    models = TrainedModel.objects.visible_to(user).filter(
        Q(owner=user) | Q(favourited_by=user) | Q(kind=TrainedModel.Kind.PRETRAINED)
    )
    return (
        ModelVersion.objects.filter(model__in=models.values("pk"))
        .select_related("model")
        .order_by("model__name", "-created_at")
    )


def volumes(user):
    """Volumes mount writable, so only those the user may write to."""
    if user.is_staff:
        return Volume.objects.all().order_by("name")
    from console.models import Membership

    their_projects = Membership.objects.filter(user=user).values("project_id")
    return Volume.objects.filter(
        Q(owner=user) | Q(project__in=their_projects, others_access=Access.READ_WRITE)
    ).order_by("name")


def specs():
    return NodeSpec.objects.live().select_related("accelerator_model")


def accelerator_models():
    return AcceleratorModel.objects.live()


def images():
    """Images for training jobs; the form still checks the scope of what comes back."""
    return Image.objects.for_training()


def may_run_locally(project, pool=None, node_names=()) -> bool:
    """Whether a job of ``project`` with this pool or these pinned nodes could be placed on
    a node the local backend runs (one of no cluster): its image then needs a local
    runtime. A pool or nodes of a Kubernetes cluster need none: the image is a container
    there."""
    if node_names:
        candidates = Node.objects.live().filter(name__in=list(node_names))
    elif pool:
        candidates = Node.objects.live().filter(pool=pool)
    else:
        candidates = usable_nodes(project).filter(pool__isnull=True)
    return candidates.filter(cluster__isnull=True).exists()


def images_not_local(queryset) -> dict[str, str]:
    """Of these images, those the local backend cannot run: primary key -> why."""
    found = {}
    for image in queryset:
        problem = runtimes.local_problem(image)
        if problem:
            found[str(image.pk)] = problem
    return found


def drivers():
    return DriverVersion.objects.live()


def pools(project):
    if project is None:
        return ResourcePool.objects.none()
    return ResourcePool.objects.live().filter(projects=project)


def nodes(user, project):
    """Nodes a job of the project may be pinned to: shared ones and its pools' (SPEC J10).
    An admin sees every pool on /cluster/, but their jobs run by their project's rules."""
    return usable_nodes(project).order_by("name")


def named(field):
    """The choices of a model choice ``field`` when they go by a ``name`` (and the field is
    not keyed by another column): how job.yaml and the API name them. None otherwise."""
    queryset = getattr(field, "queryset", None)
    if queryset is None or getattr(field, "to_field_name", None):
        return None
    if not any(f.name == "name" for f in queryset.model._meta.get_fields()):
        return None
    return queryset
