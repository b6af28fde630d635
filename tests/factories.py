"""Factories shared by every app's tests (per-app ones live beside their tests)."""

import factory
from django.contrib.auth import get_user_model

from console.models import Membership, Project, Role

PASSWORD = "correct horse battery"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ["username"]
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def saved(user, create, extracted, **kwargs):
        if create:
            user.save()


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project
        django_get_or_create = ["slug"]

    slug = factory.Sequence(lambda n: f"project{n}")
    name = factory.LazyAttribute(lambda project: project.slug.title())


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.MEMBER
