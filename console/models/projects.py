"""Projects (teams) and who belongs to them."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _


class Role(models.TextChoices):
    MEMBER = "member", _("Member")
    LEAD = "lead", _("Lead")
    ADMIN = "admin", _("Project admin")


# The roles that lead a project: its queue, its members' usage (SPEC P, G4).
LEAD_ROLES = (Role.LEAD, Role.ADMIN)


class ProjectQuerySet(models.QuerySet):
    def for_user(self, user) -> ProjectQuerySet:
        """Projects a user works in; platform admins see every project."""
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self.all()
        return self.filter(memberships__user=user).distinct()


class Department(models.Model):
    """A group of projects with a quota of its own (SPEC G1): its projects' guarantees must
    fit in its guarantee, and together they never hold more than its maximum."""

    name = models.CharField(_("name"), max_length=100, unique=True)
    slug = models.SlugField(_("slug"), max_length=63, unique=True)
    description = models.CharField(_("description"), max_length=200, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("department")
        verbose_name_plural = _("departments")

    def __str__(self) -> str:
        return self.name


class Project(models.Model):
    name = models.CharField(_("name"), max_length=100, unique=True)
    slug = models.SlugField(_("slug"), max_length=63, unique=True)
    description = models.TextField(_("description"), blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    department = models.ForeignKey(
        Department, verbose_name=_("department"), null=True, blank=True,
        on_delete=models.SET_NULL, related_name="projects",
    )  # fmt: skip
    # The project's members as a group: what others may do with a member's jobs is granted
    # to this group (django-guardian), so joining or leaving a project needs no re-grant.
    group = models.OneToOneField(
        Group, null=True, blank=True, editable=False, on_delete=models.SET_NULL, related_name="+"
    )

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = _("project")
        verbose_name_plural = _("projects")

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        if self.group_id is None:
            self.group, _created = Group.objects.get_or_create(name=f"project:{self.slug}")
        super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        return reverse("project_detail", args=[self.slug])

    def role_of(self, user) -> str | None:
        """The user's role here, or None for an outsider."""
        membership = self.memberships.filter(user=user).only("role").first()
        return membership.role if membership else None


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(_("role"), max_length=10, choices=Role, default=Role.MEMBER)
    joined_at = models.DateTimeField(_("joined"), auto_now_add=True)

    class Meta:
        ordering = ["project__name", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="one_membership_per_user")
        ]
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"

    def save(self, *args, **kwargs):
        super().save(*args, **kwargs)
        self.user.groups.add(self.project.group)

    def delete(self, *args, **kwargs):
        self.user.groups.remove(self.project.group)
        return super().delete(*args, **kwargs)

    @property
    def leads(self) -> bool:
        return self.role in LEAD_ROLES
