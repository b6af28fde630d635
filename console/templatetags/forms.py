"""Render Django form fields with Bootstrap's classes, their required mark and their errors.

Every form of the console goes through these filters and the field templates under
``templates/includes/``, so that a field is marked, announced and linked to its error the
same way everywhere. Ids follow Django's own: ``<id>_helptext`` and ``<id>_error``.
"""

from django import template
from django.forms import BaseForm, BoundField

register = template.Library()

CHECKS = {"checkbox", "checkboxselectmultiple", "radioselect"}
GROUPS = {"checkboxselectmultiple", "radioselect"}


def _required_now(form: BaseForm) -> set[str]:
    """Fields a rule requires for what is typed now (the job form's algorithm unless the job
    is a batch, a resume's count once resume is on), which the field itself cannot say:
    forms that have such rules name them in ``required_now``."""
    return set(getattr(form, "required_now", ()))


@register.filter
def is_required(field: BoundField) -> bool:
    """Whether submitting without a value is refused (a lone checkbox never is here)."""
    if field.widget_type == "checkbox":
        return False
    return field.field.required or field.name in _required_now(field.form)


@register.filter
def has_required(form: BaseForm) -> bool:
    """Whether the form marks any field, and so needs the legend that says what the mark means."""
    return any(is_required(field) for field in form.visible_fields())


@register.filter
def is_group(field: BoundField) -> bool:
    """Radio buttons and checkbox lists: one fieldset and legend for several inputs."""
    return field.widget_type in GROUPS


@register.filter
def described_by(field: BoundField) -> str:
    """The ids that describe the field: its error first (what to fix), then its help."""
    ids = []
    if field.errors:
        ids.append(f"{field.auto_id}_error")
    if field.help_text:
        ids.append(f"{field.auto_id}_helptext")
    return " ".join(ids)


@register.filter
def anchor(field: BoundField) -> str:
    """The id an error summary links to: the input, or a group's first option."""
    return field.id_for_label or f"{field.auto_id}_0"


@register.filter
def fields_with_errors(form: BaseForm) -> list[BoundField]:
    return [form[name] for name in form.errors if name in form.fields]


@register.filter
def error_count(form: BaseForm) -> int:
    return sum(len(errors) for errors in form.errors.values())


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
    """The field's widget with its Bootstrap class, required and invalid states, and links
    to its error and help text."""
    attrs = {"class": widget_css(field)}
    if field.widget_type == "selectmultiple":
        attrs["size"] = 6
    if is_required(field) and not is_group(field):
        attrs["required"] = True
        attrs["aria-required"] = "true"
    if field.errors:
        attrs["aria-invalid"] = "true"
    if ids := described_by(field):
        attrs["aria-describedby"] = ids
    return field.as_widget(attrs=attrs)


@register.filter
def is_check(field: BoundField) -> bool:
    return field.widget_type in CHECKS
