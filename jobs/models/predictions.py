"""What the queue prediction said at submit time, to compare with what happened (SPEC J24)."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class JobPrediction(models.Model):
    job = models.OneToOneField("jobs.Job", on_delete=models.CASCADE, related_name="prediction")
    made_at = models.DateTimeField(_("predicted at"))
    starts_now = models.BooleanField(_("starts at once"))
    latest_start = models.DateTimeField(_("predicted start at the latest"), null=True)
    position = models.PositiveIntegerField(_("position"))
    queue_length = models.PositiveIntegerField(_("queue length"))
    reason = models.CharField(_("reason"), max_length=500, blank=True)

    class Meta:
        verbose_name = _("job prediction")
        verbose_name_plural = _("job predictions")
        indexes = [models.Index(fields=["made_at"], name="prediction_made_at")]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.latest_start}"

    def held(self, started_at, slack_seconds: int = 60) -> bool | None:
        """Whether the job started by the predicted time (None: not decided yet)."""
        if self.latest_start is None:
            return None
        if started_at is None:
            return None
        return (started_at - self.latest_start).total_seconds() <= slack_seconds
