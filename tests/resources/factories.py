"""Inventory factories: accelerator models, specs, pools, nodes, images, allocations, clusters."""

from decimal import Decimal

import factory

from resources.models import (
    AcceleratorModel,
    Allocation,
    Cluster,
    DriverVersion,
    Image,
    Node,
    NodeSpec,
    ResourcePool,
)


class AcceleratorModelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AcceleratorModel
        django_get_or_create = ["name"]

    name = "A100"
    kind = "GPU"
    memory_gib = 80


class DriverVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DriverVersion
        django_get_or_create = ["kind", "version"]

    kind = "GPU"
    version = "535.104"


class NodeSpecFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = NodeSpec

    name = factory.Sequence(lambda n: f"spec-{n}")
    cpu_millicores = 8000
    memory_mib = 64 * 1024
    boards = Decimal(0)
    accelerator_model = None

    class Params:
        gpus = factory.Trait(
            boards=Decimal(4), accelerator_model=factory.SubFactory(AcceleratorModelFactory)
        )


class ResourcePoolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ResourcePool

    name = factory.Sequence(lambda n: f"pool-{n}")


class NodeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Node

    name = factory.Sequence(lambda n: f"node-{n:04d}")
    cpu_millicores = 64000
    memory_mib = 512 * 1024
    os_image = "Ubuntu 22.04"
    kernel = "5.15.0"
    board_count = 0
    accelerator_model = None

    class Params:
        gpus = factory.Trait(
            board_count=8,
            accelerator_model=factory.SubFactory(AcceleratorModelFactory),
            driver_version=factory.SubFactory(DriverVersionFactory),
        )


def _stand_in_runtime():
    from django.conf import settings

    from tests.helpers import stand_in_runtime

    # In the checkout, never in a folder another checkout's run shares (and may leave a
    # link into a deleted checkout in).
    return stand_in_runtime(settings.BASE_DIR / "var" / "tests" / "stand-in-runtime")


class ImageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Image

    name = factory.Sequence(lambda n: f"image-{n}")
    reference = factory.LazyAttribute(lambda image: f"registry.local/{image.name}:1")
    scopes = factory.LazyFunction(lambda: ["training"])
    board_kinds = factory.LazyFunction(lambda: ["GPU", "CPU"])
    # Tests' nodes are mostly the local backend's, where an image needs a local runtime to
    # be offered: a stand-in one (tests.helpers.stand_in_runtime). Blank it to test that.
    local_runtime = factory.LazyFunction(lambda: str(_stand_in_runtime()))


class AllocationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Allocation

    node = factory.SubFactory(NodeFactory)
    holder_id = factory.Sequence(lambda n: n)
    label = factory.Sequence(lambda n: f"job-{n}")
    cpu_millicores = 1000
    memory_mib = 1024
    slots = factory.LazyFunction(list)


def held(node, began, hours: float | None, boards: str = "1", **fields) -> Allocation:
    """A ledger interval: an allocation of ``boards`` on ``node`` from ``began`` for
    ``hours`` (still held: None), with the other ledger fields given."""
    from datetime import timedelta
    from decimal import Decimal

    released = None if hours is None else began + timedelta(hours=hours)
    allocation = AllocationFactory(node=node, boards=Decimal(boards), released_at=released,
                                   **fields)  # fmt: skip
    # auto_now_add: the start of the interval is set after the row is made.
    Allocation.objects.filter(pk=allocation.pk).update(created_at=began)
    return allocation


class ClusterFactory(factory.django.DjangoModelFactory):
    """A token cluster; ``token`` sets (seals) its bearer token."""

    class Meta:
        model = Cluster
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"cluster-{n}")
    api_url = "https://k8s.example.com:6443"
    storage_claim = "console-storage"

    @factory.post_generation
    def token(cluster, create, extracted, **kwargs):
        cluster.set_token(extracted if extracted is not None else "stored-token-0123")
        if create:
            cluster.save()
