"""Factories shared by every app's tests (per-app ones live beside their tests)."""

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password

from console.models import Membership, Project, Role

PASSWORD = "correct horse battery"


class FoundOrMade(factory.django.DjangoModelFactory):
    """Get or create by ``_found_by``, as ``django_get_or_create`` would, without its savepoint
    around the insert: almost every test makes the named actors, and the savepoints were a
    third of their queries (a test has its own transaction; nothing else inserts in it)."""

    class Meta:
        abstract = True

    _found_by = ""

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        manager = cls._get_manager(model_class)
        found = manager.filter(**{cls._found_by: kwargs[cls._found_by]}).first()
        return found or manager.create(*args, **kwargs)


class UserFactory(FoundOrMade):
    class Meta:
        model = get_user_model()

    _found_by = "username"
    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.com")
    # Hashed before the insert (with the test's hasher), not set and saved again after it.
    password = factory.LazyFunction(lambda: make_password(PASSWORD))


class ProjectFactory(FoundOrMade):
    class Meta:
        model = Project

    _found_by = "slug"

    slug = factory.Sequence(lambda n: f"project{n}")
    name = factory.LazyAttribute(lambda project: project.slug.title())


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.MEMBER
