"""Training jobs: what the form records (SPEC J) and where the lifecycle stands (SPEC Q1)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from console.modes import Mode, Rules, rules_of  # shared with the catalog's suggested launch
from console.sharing import Access
from jobs.models.standing import Stands


class JobType(models.TextChoices):
    REGULAR = "regular", _("Regular")
    BATCH = "batch", _("Batch")


class Priority(models.IntegerChoices):
    NORMAL = 0, _("Normal")
    URGENT = 1, _("Urgent")
    VERY_URGENT = 2, _("Very urgent")


class Status(models.TextChoices):
    """What users see (SPEC Q1)."""

    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    ERROR = "error", _("Error")
    STOPPED = "stopped", _("Stopped")
    EXPIRED = "expired", _("Expired")
    SUCCEEDED = "succeeded", _("Succeeded")


class Phase(models.TextChoices):
    """Where the lifecycle stands; finer than the status (see jobs/lifecycle.py)."""

    QUEUED = "queued", _("Waiting in the queue")
    ADMITTED = "admitted", _("Resources reserved")
    STARTING = "starting", _("Starting")
    RUNNING = "running", _("Running")
    RESTARTING = "restarting", _("Restarting after a fault")
    RESUMING = "resuming", _("Resuming from a checkpoint")
    SUCCEEDED = "succeeded", _("Succeeded")
    ERROR = "error", _("Error")
    STOPPED = "stopped", _("Stopped")
    EXPIRED = "expired", _("Expired")


STATUS_OF_PHASE = {
    Phase.QUEUED: Status.QUEUED,
    Phase.ADMITTED: Status.RUNNING,
    Phase.STARTING: Status.RUNNING,
    Phase.RUNNING: Status.RUNNING,
    Phase.RESTARTING: Status.QUEUED,
    Phase.RESUMING: Status.QUEUED,
    Phase.SUCCEEDED: Status.SUCCEEDED,
    Phase.ERROR: Status.ERROR,
    Phase.STOPPED: Status.STOPPED,
    Phase.EXPIRED: Status.EXPIRED,
}
LIVE_STATUSES = (Status.QUEUED, Status.RUNNING)


class PerformancePolicy(models.TextChoices):
    ALERT = "alert", _("Alert only (email)")
    RESCHEDULE = "reschedule", _("Reschedule and alert")


class JobQuerySet(models.QuerySet):
    def live(self):
        return self.filter(status__in=LIVE_STATUSES)

    def queued(self):
        return self.filter(status=Status.QUEUED)

    def visible_to(self, user):
        """Jobs a user may see: their own, those their project's members share with them
        (django-guardian grants to the project's group), and every job for admins.

        "Own or shared" is checked row by row as a list walks its order's index (the shared
        ids are read once, into a hash), so a page of a list costs its page, however many
        jobs there are; counting them is :meth:`visible_set`'s."""
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self
        return self.filter(Q(owner=user) | Q(pk__in=self._shared_with(user)))

    def visible_set(self, user):
        """The same jobs as :meth:`visible_to`, as the union of the owner's ids and the
        shared ids, each read from its own index: what counting them costs is what the user
        may see, not every job; a walk in some order would have to read them all."""
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self
        return self.filter(pk__in=self.visible_ids(user))

    def visible_ids(self, user):
        """The ids of :meth:`visible_to`'s jobs, as one list with no job read: the cheapest
        to count, when no search narrows them."""
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self.order_by().values_list("pk", flat=True)
        own = self.model.objects.filter(owner=user).order_by().values_list("pk", flat=True)
        shared = self._shared_with(user).order_by().values_list("content_object_id", flat=True)
        return own.union(shared).order_by()  # no job order: the ids are not jobs

    @staticmethod
    def _shared_with(user):
        from jobs.models.access import JobGroupObjectPermission

        return JobGroupObjectPermission.objects.filter(
            group__user=user, permission__codename="view_job"
        ).values("content_object_id")


class Job(Stands, models.Model):
    name = models.CharField(_("name"), max_length=40)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("creator"), on_delete=models.PROTECT,
        related_name="jobs",
    )  # fmt: skip
    project = models.ForeignKey(
        "console.Project", verbose_name=_("project"), on_delete=models.PROTECT, related_name="jobs"
    )
    others_access = models.CharField(
        _("others' access"), max_length=10, choices=Access, default=Access.NONE
    )
    job_type = models.CharField(
        _("job type"), max_length=8, choices=JobType, default=JobType.REGULAR
    )
    priority = models.PositiveSmallIntegerField(
        _("priority"), choices=Priority, default=Priority.NORMAL
    )
    mode = models.CharField(_("distributed mode"), max_length=12, choices=Mode, default=Mode.SINGLE)
    specs = models.ManyToManyField(
        "resources.NodeSpec", through="JobSpecChoice", verbose_name=_("node specs"),
        related_name="+",
    )  # fmt: skip
    spec = models.ForeignKey(
        "resources.NodeSpec", verbose_name=_("spec it runs on"), null=True, blank=True,
        on_delete=models.PROTECT, related_name="+",
    )  # fmt: skip
    # What the form asked for, kept as it was: a job back in the queue asks for it again,
    # and an elastic job admitted on fewer may grow back to it (SPEC F5).
    nodes_asked = models.PositiveSmallIntegerField(_("nodes asked for"), default=1)
    # What admission gave the run: None until admitted and again once back in the queue;
    # fewer than asked only for an elastic job.
    nodes_granted = models.PositiveSmallIntegerField(_("nodes granted"), null=True, blank=True)
    ps_count = models.PositiveSmallIntegerField(_("parameter servers"), default=0)
    node_names = ArrayField(
        models.CharField(max_length=253), verbose_name=_("node names"), default=list, blank=True
    )
    driver_version = models.ForeignKey(
        "resources.DriverVersion", verbose_name=_("driver version"), null=True, blank=True,
        on_delete=models.PROTECT, related_name="+",
    )  # fmt: skip
    pool = models.ForeignKey(
        "resources.ResourcePool", verbose_name=_("dedicated pool"), null=True, blank=True,
        on_delete=models.PROTECT, related_name="jobs",
    )  # fmt: skip
    image = models.ForeignKey(
        "resources.Image", verbose_name=_("image"), on_delete=models.PROTECT, related_name="jobs"
    )
    algorithm = models.ForeignKey(
        "resources.Algorithm", verbose_name=_("algorithm"), null=True, blank=True,
        on_delete=models.PROTECT, related_name="+",
    )  # fmt: skip
    algorithm_read_only = models.BooleanField(_("algorithm read-only"), default=True)
    command = models.TextField(_("run command"), blank=True)
    output_path = models.CharField(_("output path"), max_length=500)
    # Checkpoint resume (SPEC J17) and fault restart (J18): exclusive.
    resume_enabled = models.BooleanField(_("checkpoint resume"), default=False)
    max_resumes = models.PositiveSmallIntegerField(_("max resumes"), default=0)
    graceful_shutdown_seconds = models.PositiveIntegerField(_("graceful shutdown (s)"), default=30)
    elastic_min_nodes = models.PositiveSmallIntegerField(
        _("elastic minimum nodes"), null=True, blank=True
    )
    elastic_scale_up = models.BooleanField(_("allow scale-up"), default=False)
    perf_threshold = models.DecimalField(
        _("performance threshold"), max_digits=4, decimal_places=3, null=True, blank=True
    )
    perf_policy = models.CharField(
        _("performance policy"), max_length=12, choices=PerformancePolicy, blank=True
    )
    # Hang detection (no progress line for a while): alert, or alert and resume.
    hang_policy = models.CharField(
        _("hang detection"), max_length=12, choices=PerformancePolicy, blank=True
    )
    fault_restart_enabled = models.BooleanField(_("fault restart"), default=False)
    max_restarts = models.PositiveSmallIntegerField(_("max restarts"), default=0)
    data_prep = models.BooleanField(_("data preparation"), default=False)
    debug_terminal = models.BooleanField(_("debug terminal"), default=False)
    duration_hours = models.PositiveIntegerField(_("duration (hours)"))
    lifecycle_before_start = models.TextField(_("before start"), blank=True)
    lifecycle_after_stop = models.TextField(_("after stop"), blank=True)
    lifecycle_on_failure = models.TextField(_("on failure"), blank=True)
    # What its owner is told of it (SPEC I4), on their channels; null: their defaults.
    notify_on = ArrayField(models.CharField(max_length=12), null=True, blank=True)

    status = models.CharField(_("status"), max_length=10, choices=Status, default=Status.QUEUED)
    phase = models.CharField(_("phase"), max_length=10, choices=Phase, default=Phase.QUEUED)
    reason = models.CharField(_("reason"), max_length=500, blank=True)  # in English
    reason_said = models.JSONField(null=True, blank=True)  # see console.words
    resubmitted = models.BooleanField(_("resubmitted after a fault"), default=False)
    resubmitted_at = models.DateTimeField(_("resubmitted at"), null=True, blank=True)
    restarts_used = models.PositiveSmallIntegerField(default=0)
    resumes_used = models.PositiveSmallIntegerField(default=0)
    cloned_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    submitted_at = models.DateTimeField(_("in the queue since"), default=timezone.now)
    # When it last joined the planned queue after being held at its team's quota maximum
    # (SPEC G1): it is planned as if submitted then, behind the promises made meanwhile.
    quota_since = models.DateTimeField(null=True, blank=True, editable=False)
    # Admitted beyond its project's guaranteed boards (SPEC G2): it runs on boards other
    # teams leave idle. Set at each admission.
    borrowing = models.BooleanField(_("on borrowed boards"), default=False, editable=False)
    # Queued within its project's guarantee while other teams borrow what it needs: since
    # then boards are reclaimed for it and no other team borrows more (SPEC G2).
    claiming_since = models.DateTimeField(null=True, blank=True, editable=False)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    deadline = models.DateTimeField(_("ends at the latest"), null=True, blank=True)
    admitted_at = models.DateTimeField(_("admitted"), null=True, blank=True)
    # Where it stands in the queue: its Standing (jobs/models/standing.py).

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("training job")
        verbose_name_plural = _("training jobs")
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="job_owner_created"),
            models.Index(fields=["project", "-created_at"], name="job_project_created"),
            models.Index(fields=["-created_at", "-id"], name="job_created"),
            models.Index(fields=["status", "priority"], name="job_status_priority"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "name"],
                condition=Q(status__in=LIVE_STATUSES),
                name="job_name_unique_among_live",
            )
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("job_detail", args=[self.pk])

    @property
    def is_live(self) -> bool:
        return self.status in LIVE_STATUSES

    @property
    def duration(self) -> timedelta:
        return timedelta(hours=self.duration_hours)

    @property
    def reason_words(self) -> str:
        """Why it ended (or failed to start) in the reader's language."""
        from console.words import wording

        return wording(self.reason, self.reason_said)

    @property
    def mode_rules(self) -> Rules:
        return rules_of(self.mode)

    @property
    def nodes(self) -> int:
        """The nodes the job runs on: those granted once admitted, else those asked for."""
        return self.nodes_granted or self.nodes_asked

    @property
    def fault_tolerant(self) -> bool:
        return self.resume_enabled or self.fault_restart_enabled

    def ordered_specs(self) -> list:
        return [choice.spec for choice in self.spec_choices.select_related("spec")]


class JobSpecChoice(models.Model):
    """One of the job's alternative specs (SPEC J9): the first that fits wins."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="spec_choices")
    spec = models.ForeignKey("resources.NodeSpec", on_delete=models.PROTECT, related_name="+")
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["order"]
        constraints = [models.UniqueConstraint(fields=["job", "spec"], name="job_spec_once")]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.spec_id}"


class SubTask(models.Model):
    """One sub-task of a batch job (SPEC J3): its own algorithm and command."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="subtasks")
    index = models.PositiveSmallIntegerField()
    algorithm = models.ForeignKey(
        "resources.Algorithm", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    algorithm_read_only = models.BooleanField(default=True)
    command = models.TextField()

    class Meta:
        ordering = ["index"]
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="subtask_index")]

    def __str__(self) -> str:
        return f"{self.job_id}-{self.index}"

    @property
    def output_dir(self) -> str:
        return f"{self.job.name}-{self.index}"


class JobDataset(models.Model):
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="datasets")
    version = models.ForeignKey(
        "resources.DatasetVersion", on_delete=models.PROTECT, related_name="+"
    )
    read_only = models.BooleanField(default=True)

    def __str__(self) -> str:
        return f"{self.version_id} ({'ro' if self.read_only else 'rw'})"


class JobAnnotation(models.Model):
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="annotations")
    version = models.ForeignKey(
        "resources.AnnotationVersion", on_delete=models.PROTECT, related_name="+"
    )

    def __str__(self) -> str:
        return str(self.version_id)


class JobModel(models.Model):
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="models")
    version = models.ForeignKey(
        "resources.ModelVersion", on_delete=models.PROTECT, related_name="+"
    )

    def __str__(self) -> str:
        return str(self.version_id)


class JobVolume(models.Model):
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="volumes")
    volume = models.ForeignKey("resources.Volume", on_delete=models.PROTECT, related_name="+")

    def __str__(self) -> str:
        return str(self.volume_id)
