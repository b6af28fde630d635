from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = _("Console")

    def ready(self) -> None:
        from console import checks  # noqa: F401 - registers the deploy checks
