"""``{% status_badge job %}``: a job's status as a badge, its phase on hover (the job list's
table writes the same badge from Python, through :func:`status_badge`)."""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()


@register.simple_tag
def status_badge(job) -> SafeString:
    return format_html(
        '<span class="badge status-{}" title="{}">{}</span>',
        job.status, job.get_phase_display(), job.get_status_display(),
    )  # fmt: skip
