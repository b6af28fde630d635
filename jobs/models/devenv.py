"""Development environments: the minimum SPEC O8 needs (from a job, and back to a job)."""

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class DevEnvironment(models.Model):
    name = models.CharField(_("name"), max_length=40)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="devenvs"
    )
    project = models.ForeignKey("console.Project", on_delete=models.PROTECT, related_name="+")
    image = models.ForeignKey("resources.Image", on_delete=models.PROTECT, related_name="+")
    spec = models.ForeignKey("resources.NodeSpec", on_delete=models.PROTECT, related_name="+")
    algorithm = models.ForeignKey(
        "resources.Algorithm", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    dataset_versions = models.ManyToManyField("resources.DatasetVersion", blank=True)
    command = models.TextField(_("last command"), blank=True)
    from_job = models.ForeignKey(
        "jobs.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="devenvs"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("development environment")
        verbose_name_plural = _("development environments")

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("devenv_detail", args=[self.pk])
