"""The job list's table: its columns, their headers' sort links, and each cell's HTML.

Cells are written here in Python rather than as a template each (150 small templates for a
page of 25 jobs), and the table is plain rather than a table library's: its per-cell
machinery (a signature inspected per cell, attributes merged per cell) cost more than the
page's queries.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from django.urls import reverse
from django.utils import formats, timezone
from django.utils.functional import Promise
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from console.keyset import query
from jobs.models import Job, JobType, Status
from jobs.templatetags.job_badges import run_badges, status_badge


@dataclass(frozen=True)
class Column:
    name: str  # also what ``sort=`` names, when ``sortable``
    header: str | Promise
    cell: Callable[[Job], object]
    sortable: bool = True
    td_class: str = ""


@dataclass(frozen=True)
class Header:
    text: str | Promise
    href: str | None  # sorts by this column; None: not sortable
    state: str  # "asc", "desc" or "" (sorted by another column)


class JobTable:
    """A page of jobs (already sorted by the database) as headers and rows of cells."""

    def __init__(self, jobs: list[Job], sort: str, kept: Mapping[str, str]):
        self.jobs, self.sort, self.kept = jobs, sort, kept

    @property
    def columns(self) -> list[Column]:
        return COLUMNS

    def headers(self) -> list[Header]:
        found = []
        for column in COLUMNS:
            if not column.sortable:
                found.append(Header(column.header, None, ""))
                continue
            state = {column.name: "asc", f"-{column.name}": "desc"}.get(self.sort, "")
            following = f"-{column.name}" if state == "asc" else column.name
            found.append(Header(column.header, query(self.kept, sort=following), state))
        return found

    def rows(self) -> list[tuple[Job, list[tuple[str, object]]]]:
        return [(job, [(c.td_class, c.cell(job)) for c in COLUMNS]) for job in self.jobs]


def cell_select(record: Job) -> SafeString:
    if not record.may_change:
        return mark_safe("")
    return format_html(
        '<input class="form-check-input" type="checkbox" name="ids" value="{}"'
        ' form="bulk-delete" aria-label="{}">',
        record.pk, record.name,
    )  # fmt: skip


def cell_name(record: Job) -> SafeString:
    link = format_html(
        '<a class="fw-medium" href="{}">{}</a>',
        reverse("job_detail", args=[record.pk]), record.name,
    )  # fmt: skip
    if record.job_type == JobType.BATCH:
        return format_html('{} <span class="badge text-bg-light border">batch</span>', link)
    return link


def cell_status(record: Job) -> SafeString:
    badge = status_badge(record)
    if record.status == Status.RUNNING:
        extra = run_badges(record)
        return format_html("{} {}", badge, extra) if extra else badge
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


def cell_spec_names(record: Job) -> SafeString:
    return format_html('<span class="small">{}</span>', ", ".join(record.spec_names or ()))


def cell_actions(record: Job) -> SafeString:
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
    entries = format_html_join("", '<li><a class="dropdown-item{}" href="{}">{}</a></li>', items)
    return format_html(
        # Placed "fixed": the table scrolls sideways in its card, which would cut off
        # a menu opened on its last rows.
        '<div class="dropdown"><button class="btn btn-sm btn-outline-secondary'
        ' dropdown-toggle" type="button" data-bs-toggle="dropdown" aria-expanded="false"'
        ' data-bs-popper-config=\'{{"strategy":"fixed"}}\'>'
        '{}</button><ul class="dropdown-menu dropdown-menu-end">{}</ul></div>',
        _("Operations"), entries,
    )  # fmt: skip


def cell_choice(field: str) -> Callable[[Job], object]:
    return lambda record: getattr(record, f"get_{field}_display")()


def cell_created(record: Job) -> str:
    return formats.date_format(timezone.localtime(record.created_at), "SHORT_DATETIME_FORMAT")


COLUMNS = [
    Column("select", "", cell_select, sortable=False, td_class="text-center"),
    Column("name", gettext_lazy("Name"), cell_name),
    Column("status", gettext_lazy("Status"), cell_status),
    Column("priority", gettext_lazy("Priority"), cell_choice("priority")),
    Column("mode", gettext_lazy("Mode"), cell_choice("mode")),
    Column("spec_names", gettext_lazy("Specs"), cell_spec_names, sortable=False),
    Column("owner", gettext_lazy("Creator"), lambda record: record.owner.username),
    Column("project", gettext_lazy("Project"), lambda record: record.project.name),
    Column("created_at", gettext_lazy("Created"), cell_created),
    Column("actions", "", cell_actions, sortable=False, td_class="text-end"),
]
