"""The job list's table (django-tables2)."""

from __future__ import annotations

import django_tables2 as tables
from django.utils.translation import gettext_lazy as _

from jobs.models import Job


class JobTable(tables.Table):
    select = tables.TemplateColumn(
        template_name="jobs/cells/select.html", verbose_name="", orderable=False,
        attrs={"td": {"class": "text-center"}},
    )  # fmt: skip
    name = tables.TemplateColumn(template_name="jobs/cells/name.html", verbose_name=_("Name"))
    status = tables.TemplateColumn(template_name="jobs/cells/status.html", verbose_name=_("Status"))
    priority = tables.Column(verbose_name=_("Priority"))
    mode = tables.Column(verbose_name=_("Mode"))
    spec_names = tables.TemplateColumn(
        template_name="jobs/cells/specs.html", verbose_name=_("Specs"), orderable=False
    )
    owner = tables.Column(verbose_name=_("Creator"), accessor="owner__username")
    project = tables.Column(verbose_name=_("Project"), accessor="project__name")
    created_at = tables.DateTimeColumn(verbose_name=_("Created"), short=True)
    actions = tables.TemplateColumn(
        template_name="jobs/cells/actions.html",
        verbose_name="",
        orderable=False,
        attrs={"td": {"class": "text-end"}},
    )

    class Meta:
        model = Job
        fields: tuple = ()
        sequence = (
            "select", "name", "status", "priority", "mode", "spec_names", "owner", "project",
            "created_at", "actions",
        )  # fmt: skip
        order_by = "-created_at"
        attrs = {"class": "table table-hover align-middle mb-0", "data-testid": "job-table"}
        empty_text = _("No job matches.")
