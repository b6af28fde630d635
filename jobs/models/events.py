"""The timeline of a job: one event per transition and per notable fact."""

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class JobEvent(models.Model):
    class Kind(models.TextChoices):
        INFO = "info", _("Info")
        WARNING = "warning", _("Warning")
        ERROR = "error", _("Error")

    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(default=timezone.now, db_index=True)
    kind = models.CharField(max_length=8, choices=Kind, default=Kind.INFO)
    phase = models.CharField(max_length=10, blank=True)
    message = models.CharField(max_length=1000)  # in English
    # The message id and parameters of a message worded per reader (console.words); null for
    # free text.
    said = models.JSONField(null=True, blank=True)
    # The keyword people search logs for (seed 004: "item"), e.g. "dns", "disk-size root".
    item = models.CharField(max_length=40, blank=True)
    # What it tells the job's owner (jobs.models.notify.Notice; "" for nothing): the
    # notifications read the events that have one (jobs/notify).
    notice = models.CharField(max_length=12, blank=True, default="")
    actor = models.ForeignKey(
        "auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["at", "id"]
        verbose_name = _("job event")
        verbose_name_plural = _("job events")

    def __str__(self) -> str:
        return f"{self.at:%H:%M:%S} {self.message}"

    @property
    def text(self) -> str:
        """The message in the reader's language."""
        from console.words import wording

        return wording(self.message, self.said)
