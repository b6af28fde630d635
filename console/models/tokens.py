"""Personal API tokens (SPEC I2): what a script presents instead of a password.

Only a digest of the secret is kept: the token is shown once, when it is made. A token
carries its owner's permissions, never more; a read-only one may not change anything.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class ApiToken(models.Model):
    class Scope(models.TextChoices):
        READ = "read", _("Read only")
        WRITE = "write", _("Read and write")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE,
        related_name="api_tokens",
    )  # fmt: skip
    name = models.CharField(_("name"), max_length=60)
    scope = models.CharField(_("scope"), max_length=8, choices=Scope.choices)
    # The token's first characters, shown in lists and used to find it; never secret alone.
    prefix = models.CharField(_("prefix"), max_length=16, unique=True)
    digest = models.CharField(max_length=64)  # SHA-256 of the whole token, hex
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    expires_at = models.DateTimeField(_("expires"), null=True, blank=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True)
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )  # fmt: skip

    class Meta:
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "name"],
                condition=models.Q(revoked_at__isnull=True),
                name="one_live_token_per_name",
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} / {self.name} ({self.prefix}…)"

    def live(self, now=None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)

    @property
    def writes(self) -> bool:
        return self.scope == self.Scope.WRITE
