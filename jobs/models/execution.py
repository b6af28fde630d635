"""What running a job leaves behind: its attempts (one backend workload each) and the
resource use sampled while they ran (SPEC O2)."""

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class Attempt(models.Model):
    """One workload run for a job: a regular job has one per start, a batch job one per
    sub-task (they run one after the other on the job's nodes)."""

    class State(models.TextChoices):
        STARTING = "starting", _("starting")
        RUNNING = "running", _("running")
        SUCCEEDED = "succeeded", _("succeeded")
        FAILED = "failed", _("failed")
        STOPPED = "stopped", _("stopped")

    class StopCause(models.TextChoices):
        NONE = "", _("none")
        USER = "user", _("stopped by a person")
        EXPIRY = "expiry", _("duration reached")
        FAULT = "fault", _("interrupted for a fault")
        SCALE = "scale", _("growing to more nodes")
        RECLAIM = "reclaim", _("its borrowed boards reclaimed")
        IDLE = "idle", _("stopped as idle")

    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveSmallIntegerField()
    subtask = models.ForeignKey(
        "jobs.SubTask", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    backend = models.CharField(max_length=20)
    # Where it runs when ``backend`` is "kubernetes".
    cluster = models.ForeignKey(
        "resources.Cluster", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    workload_id = models.CharField(max_length=80, unique=True)
    state = models.CharField(max_length=10, choices=State, default=State.STARTING)
    stop_cause = models.CharField(max_length=8, choices=StopCause, blank=True, default="")
    # Replicas as launched: [{"name", "label", "node", "runs_entry"}], for logs and charts.
    replicas = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    # Set once the backend accepted the workload: until then a poll finding nothing is no news.
    submitted_at = models.DateTimeField(null=True, blank=True)
    # Submits the cluster did not answer (retried by the sync until SUBMIT_SECONDS).
    submit_tries = models.PositiveSmallIntegerField(default=0)
    running_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    reason = models.CharField(max_length=500, blank=True)
    sampled_at = models.DateTimeField(null=True, blank=True)
    # The fault that interrupted it: cause, check, nodes, message (jobs/faults/recovery.py).
    fault = models.JSONField(default=dict, blank=True)
    # The performance and hang watch of its log (jobs/faults/watch.py).
    watch = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["job", "number"]
        constraints = [
            models.UniqueConstraint(fields=["job", "number"], name="attempt_job_number"),
        ]
        indexes = [
            models.Index(fields=["state"], condition=models.Q(ended_at__isnull=True),
                         name="attempt_live"),
        ]  # fmt: skip
        verbose_name = _("attempt")
        verbose_name_plural = _("attempts")

    def __str__(self) -> str:
        return self.workload_id

    @property
    def live(self) -> bool:
        return self.ended_at is None


class UsageSample(models.Model):
    """One replica's use at one moment; ``cpu_percent`` 100 = one core busy."""

    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="samples")
    replica = models.CharField(max_length=64)
    at = models.DateTimeField(default=timezone.now)
    cpu_percent = models.FloatField()
    memory_mib = models.FloatField()
    accelerator_util = models.FloatField(null=True, blank=True)
    accelerator_memory_mib = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["attempt", "replica", "at"]
        indexes = [models.Index(fields=["attempt", "replica", "at"], name="usage_series")]
        verbose_name = _("usage sample")
        verbose_name_plural = _("usage samples")

    def __str__(self) -> str:
        return f"{self.replica} {self.at:%H:%M:%S}"
