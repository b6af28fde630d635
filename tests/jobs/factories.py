"""Job factories: a queued single-node job of alice's, with one spec, by default."""

from __future__ import annotations

import factory

from console.sharing import Access
from jobs import permissions
from jobs.models import Job, JobSpecChoice
from resources.catalog import storage
from tests.factories import ProjectFactory, UserFactory
from tests.resources.catalog_factories import AlgorithmFactory
from tests.resources.factories import ImageFactory, NodeSpecFactory


class JobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Job
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"job-{n}")
    owner = factory.SubFactory(UserFactory)
    project = factory.SubFactory(ProjectFactory)
    others_access = Access.NONE
    image = factory.SubFactory(ImageFactory)
    algorithm = factory.SubFactory(
        AlgorithmFactory,
        owner=factory.SelfAttribute("..owner"),
        project=factory.SelfAttribute("..project"),
    )
    command = "python /workspace/algorithm/train.py"
    output_path = factory.LazyAttribute(
        lambda job: f"{storage.personal_folder(job.owner)}/outputs/{job.name}"
    )
    duration_hours = 24

    @factory.post_generation
    def specs(job, create, extracted, **kwargs):
        if not create:
            return
        for order, spec in enumerate(extracted or [NodeSpecFactory()]):
            JobSpecChoice.objects.create(job=job, spec=spec, order=order)
        permissions.grant(job)
