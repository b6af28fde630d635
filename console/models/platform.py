"""Stored values of the platform limits (declared in console.limits) and their audit trail."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class PlatformSetting(models.Model):
    name = models.CharField(_("name"), max_length=64, unique=True)
    value = models.JSONField(_("value"))
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("platform setting")
        verbose_name_plural = _("platform settings")

    def __str__(self) -> str:
        return self.name


class SettingChange(models.Model):
    """Who changed which limit, when, from what to what."""

    name = models.CharField(_("setting"), max_length=64)
    old_value = models.JSONField(_("old value"), null=True)
    new_value = models.JSONField(_("new value"))
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_at = models.DateTimeField(_("changed"), auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-changed_at", "-id"]
        verbose_name = _("setting change")
        verbose_name_plural = _("setting changes")

    def __str__(self) -> str:
        return f"{self.name}: {self.old_value!r} -> {self.new_value!r}"
