"""Render Django form fields with Bootstrap's classes, errors included."""

from django import template
from django.forms import BoundField

register = template.Library()

CHECKS = {"checkbox", "checkboxselectmultiple", "radioselect"}


@register.filter
def widget_css(field: BoundField) -> str:
    """The Bootstrap class a field's input needs, with ``is-invalid`` after an error."""
    kind = field.widget_type
    base = (
        "form-check-input"
        if kind in CHECKS
        else "form-select"
        if kind in {"select", "selectmultiple"}
        else "form-control"
    )
    return f"{base} is-invalid" if field.errors else base


@register.filter
def bootstrap(field: BoundField):
    """The field's widget with its Bootstrap class and a link to its help text."""
    attrs = {"class": widget_css(field)}
    if field.widget_type == "selectmultiple":
        attrs["size"] = 6
    if field.help_text:
        attrs["aria-describedby"] = f"{field.auto_id}_help"
    return field.as_widget(attrs=attrs)


@register.filter
def is_check(field: BoundField) -> bool:
    return field.widget_type in CHECKS
