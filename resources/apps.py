from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ResourcesConfig(AppConfig):
    name = "resources"
    verbose_name = _("Resources")

    def ready(self):
        from console import hooks as console_hooks
        from resources.quota_standing import project_panel

        console_hooks.project_panels.append(project_panel)
