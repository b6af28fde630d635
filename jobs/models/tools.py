"""Tools opened beside a job: TensorBoard (SPEC O9) and JupyterLab (O8).

A tool is a process the backend runs like one replica of a workload (the owner's identity,
the job's mounts and outputs), listening on a socket only the console's proxy can reach
(``/tools/<id>/``, see ``console/asgi.py``). ``secret`` is what the proxy presents to it;
it never leaves the server.
"""

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class Tool(models.Model):
    class Kind(models.TextChoices):
        TENSORBOARD = "tensorboard", _("TensorBoard")
        JUPYTER = "jupyter", _("JupyterLab")

    class State(models.TextChoices):
        STARTING = "starting", _("starting")
        RUNNING = "running", _("running")
        STOPPED = "stopped", _("stopped")
        FAILED = "failed", _("failed")

    kind = models.CharField(_("kind"), max_length=12, choices=Kind)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    job = models.ForeignKey(
        "jobs.Job", null=True, blank=True, on_delete=models.CASCADE, related_name="tools"
    )
    devenv = models.ForeignKey(
        "jobs.DevEnvironment", null=True, blank=True, on_delete=models.CASCADE,
        related_name="tools",
    )  # fmt: skip
    state = models.CharField(_("state"), max_length=10, choices=State, default=State.STARTING)
    workload_id = models.CharField(max_length=80, unique=True)
    # Where the proxy reaches it: a Unix socket path on the console's machine.
    address = models.CharField(max_length=500, blank=True)
    secret = models.CharField(max_length=64)
    message = models.CharField(_("message"), max_length=500, blank=True)  # in English
    message_said = models.JSONField(null=True, blank=True)  # the same, for each reader's language
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    ready_at = models.DateTimeField(_("ready"), null=True, blank=True)
    last_used_at = models.DateTimeField(_("last used"), default=timezone.now)
    stopped_at = models.DateTimeField(_("stopped"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("tool")
        verbose_name_plural = _("tools")
        indexes = [models.Index(fields=["state"], name="tool_state")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.pk}"

    def get_absolute_url(self) -> str:
        """The console page that shows the tool."""
        if self.kind == self.Kind.TENSORBOARD:
            return reverse("job_tensorboard", args=[self.job_id])
        return reverse("devenv_lab", args=[self.devenv_id])

    @property
    def message_words(self) -> str:
        """Why it ended, in the reader's language."""
        from console.words import wording

        return wording(self.message, self.message_said)

    @property
    def live(self) -> bool:
        return self.state in (self.State.STARTING, self.State.RUNNING)

    def proxy_url(self) -> str:
        return f"/tools/{self.pk}/"
