"""Paths shown in narrow places."""

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.filter
def path_breaks(path) -> SafeString:
    """``path`` escaped, with a line-break opportunity after each "/": a long path wraps
    between its folders instead of pushing a table past its card or breaking mid-name."""
    return mark_safe(escape(str(path or "")).replace("/", "/<wbr>"))
