"""When the background processes were last seen, so pages can say whether they run."""

from datetime import timedelta

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class Heartbeat(models.Model):
    WORKER = "worker"
    SCHEDULER = "scheduler"

    name = models.CharField(_("process"), max_length=32, unique=True)
    seen_at = models.DateTimeField(_("last seen"))

    class Meta:
        verbose_name = _("heartbeat")
        verbose_name_plural = _("heartbeats")

    def __str__(self) -> str:
        return f"{self.name} seen {self.seen_at:%Y-%m-%d %H:%M:%S}"

    @classmethod
    def beat(cls, name: str) -> None:
        cls.objects.update_or_create(name=name, defaults={"seen_at": timezone.now()})

    @property
    def alive(self) -> bool:
        return timezone.now() - self.seen_at < timedelta(seconds=90)
