"""The job list's table (django-tables2).

Its cells are written here rather than as a template each: a template per cell made a page
of 25 jobs render 150 small templates, the larger part of the page's time.
"""

from __future__ import annotations

import django_tables2 as tables
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from jobs.models import Job, JobType, Status
from jobs.templatetags.job_badges import status_badge


class JobTable(tables.Table):
    select = tables.Column(
        verbose_name="", orderable=False, empty_values=(),
        attrs={"td": {"class": "text-center"}},
    )  # fmt: skip
    name = tables.Column(verbose_name=gettext_lazy("Name"))
    status = tables.Column(verbose_name=gettext_lazy("Status"))
    priority = tables.Column(verbose_name=gettext_lazy("Priority"))
    mode = tables.Column(verbose_name=gettext_lazy("Mode"))
    spec_names = tables.Column(verbose_name=gettext_lazy("Specs"), orderable=False, empty_values=())
    owner = tables.Column(verbose_name=gettext_lazy("Creator"), accessor="owner__username")
    project = tables.Column(verbose_name=gettext_lazy("Project"), accessor="project__name")
    created_at = tables.DateTimeColumn(verbose_name=gettext_lazy("Created"), short=True)
    actions = tables.Column(
        verbose_name="", orderable=False, empty_values=(),
        attrs={"td": {"class": "text-end"}},
    )  # fmt: skip

    class Meta:
        model = Job
        fields: tuple = ()
        sequence = (
            "select", "name", "status", "priority", "mode", "spec_names", "owner", "project",
            "created_at", "actions",
        )  # fmt: skip
        order_by = "-created_at"
        attrs = {"class": "table table-hover align-middle mb-0", "data-testid": "job-table"}
        empty_text = gettext_lazy("No job matches.")

    def render_select(self, record: Job) -> SafeString:
        if not record.may_change:
            return mark_safe("")
        return format_html(
            '<input class="form-check-input" type="checkbox" name="ids" value="{}"'
            ' form="bulk-delete" aria-label="{}">',
            record.pk, record.name,
        )  # fmt: skip

    def render_name(self, record: Job) -> SafeString:
        link = format_html(
            '<a class="fw-medium" href="{}">{}</a>',
            reverse("job_detail", args=[record.pk]), record.name,
        )  # fmt: skip
        if record.job_type == JobType.BATCH:
            return format_html('{} <span class="badge text-bg-light border">batch</span>', link)
        return link

    def render_status(self, record: Job) -> SafeString:
        badge = status_badge(record)
        if record.status != Status.QUEUED or not record.queue_position:
            return badge
        standing = f"#{record.queue_position}"
        if record.latest_start:
            at = timezone.localtime(record.latest_start)
            at = formats.date_format(at, "SHORT_DATETIME_FORMAT")
            standing += " · " + _("by %(at)s") % {"at": at}
        return format_html(
            '{}<div class="small text-body-secondary text-nowrap" title="{}">{}</div>',
            badge, getattr(record, "reason_text", ""), standing,
        )  # fmt: skip

    def render_spec_names(self, record: Job) -> SafeString:
        return format_html('<span class="small">{}</span>', ", ".join(record.spec_names or ()))

    def render_actions(self, record: Job) -> SafeString:
        items = [
            ("", reverse("job_clone", args=[record.pk]), _("Clone")),
            ("", reverse("job_devenv", args=[record.pk]), _("Create dev environment")),
        ]
        if record.may_change:
            detail = reverse("job_detail", args=[record.pk])
            if record.status == Status.QUEUED:
                items.append(("", f"{detail}#adjust-priority", _("Adjust priority")))
            elif record.status == Status.RUNNING:
                items.append(("", f"{detail}#adjust-duration", _("Adjust duration")))
            if record.status in (Status.QUEUED, Status.RUNNING):
                items.append((" text-danger", reverse("job_stop", args=[record.pk]), _("Stop")))
            items.append((" text-danger", reverse("job_delete", args=[record.pk]), _("Delete")))
        entries = format_html_join(
            "", '<li><a class="dropdown-item{}" href="{}">{}</a></li>', items
        )
        return format_html(
            # Placed "fixed": the table scrolls sideways in its card, which would cut off
            # a menu opened on its last rows.
            '<div class="dropdown"><button class="btn btn-sm btn-outline-secondary'
            ' dropdown-toggle" type="button" data-bs-toggle="dropdown" aria-expanded="false"'
            ' data-bs-popper-config=\'{{"strategy":"fixed"}}\'>'
            '{}</button><ul class="dropdown-menu dropdown-menu-end">{}</ul></div>',
            _("Operations"), entries,
        )  # fmt: skip
