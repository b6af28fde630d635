"""A job's fault history (SPEC F): what failed, where, what the platform did, and the
counts used and allowed at that moment. The job page draws its timeline from these."""

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class FaultRecord(models.Model):
    class Action(models.TextChoices):
        RESTART = "restart", _("Restarted elsewhere")
        RESUME = "resume", _("Resumed from a checkpoint")
        SCALE = "scale", _("Grew to more nodes")
        ALERT = "alert", _("Alerted the owner")
        ERROR = "error", _("Ended as error")
        NONE = "none", _("Nothing yet")

    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="faults")
    attempt = models.ForeignKey(
        "jobs.Attempt", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    at = models.DateTimeField(default=timezone.now)
    nodes = ArrayField(models.CharField(max_length=253), default=list, blank=True)
    # The check that found it, as people search logs for it (seed 004's item keywords, and
    # "heartbeat", "nic", "exit-code", "performance", "hang", "process").
    item = models.CharField(max_length=40)
    message = models.CharField(max_length=1000)  # in English
    said = models.JSONField(null=True, blank=True)
    action = models.CharField(max_length=8, choices=Action, default=Action.NONE)
    isolated = models.BooleanField(default=False)  # its nodes were isolated for it
    used = models.PositiveSmallIntegerField(default=0)  # restarts/resumes used after it
    allowed = models.PositiveSmallIntegerField(default=0)
    # Seconds from the fault to the platform acting on it, and to training again.
    detected_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["at", "id"]
        verbose_name = _("fault")
        verbose_name_plural = _("faults")

    def __str__(self) -> str:
        return f"{self.job_id} {self.item} {self.action}"

    @property
    def text(self) -> str:
        from console.words import wording

        return wording(self.message, self.said)
