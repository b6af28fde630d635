from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = _("Training jobs")

    def ready(self) -> None:
        from console import hooks as console_hooks
        from jobs import connections, inventory_links
        from jobs.views import dashboard
        from resources import hooks

        hooks.usage_providers.append(inventory_links.live_jobs_using)
        hooks.demand_providers.append(inventory_links.queued_boards_by_model)
        hooks.waiting_providers.append(inventory_links.queued_boards_by_project)
        console_hooks.dashboard_panels.append(dashboard.my_jobs_panel)
        console_hooks.connection_routes.append(connections.route)

        from jobs import hooks as job_hooks
        from jobs.admission.db import ask_for_pass

        job_hooks.queue_listeners.append(ask_for_pass)
        hooks.inventory_listeners.append(ask_for_pass)

        from jobs import operations
        from jobs.execution import runs, stopping

        job_hooks.admission_listeners.append(runs.launch)
        job_hooks.subtask_starters.append(runs.start)
        operations.stoppers.append(stopping.request_stop)
        operations.forgetters.append(stopping.forget)

        from jobs.tools import service as tools

        operations.forgetters.append(tools.forget)
