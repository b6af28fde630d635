"""``{% status_badge job %}``: a job's status as a badge, its phase on hover; ``{% run_badges
job %}``: what a running job's status does not say (it borrows boards, it was found idle).
The job list's table writes the same badges from Python, through these functions."""

from __future__ import annotations

from django import template
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

register = template.Library()


@register.simple_tag
def status_badge(job) -> SafeString:
    return format_html(
        '<span class="badge status-{}" title="{}">{}</span>',
        job.status, job.get_phase_display(), job.get_status_display(),
    )  # fmt: skip


@register.simple_tag
def run_badges(job, size: str = "") -> SafeString:
    """``size="fs-6"`` on the job's page, beside its name."""
    if job.status != "running":
        return SafeString("")
    badges = []
    if job.borrowing:
        badges.append((
            "text-bg-warning", "borrowing",
            _("Admitted beyond its project’s guaranteed boards: it runs on boards other teams "
              "leave idle, and stops (with the checkpoint signal) if a team needs them for "
              "its guarantee."),
            _("borrowed boards"),
        ))  # fmt: skip
    if getattr(job, "idle_since", None):
        at = formats.date_format(timezone.localtime(job.idle_since), "SHORT_DATETIME_FORMAT")
        badges.append((
            "text-bg-light border border-warning", "idle",
            _("Found idle at %(at)s: over the admin’s idle window, its boards (its CPUs where "
              "boards are not measured) were used less than the idle threshold. Its events say "
              "how much.") % {"at": at},
            pgettext("a running job whose boards go unused", "idle"),
        ))  # fmt: skip
    return format_html_join(
        " ", '<span class="badge {} align-middle {}" data-testid="{}" title="{}">{}</span>',
        ((css, size, testid, title, text) for css, testid, title, text in badges),
    )  # fmt: skip
