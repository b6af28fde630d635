"""Select widgets that render their options without one template per option.

Django renders every <option> through the template engine, about a tenth of a millisecond
each: a form offering a thousand-item catalog spends most of its time there.
"""

from __future__ import annotations

from django import forms
from django.forms.utils import flatatt
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _


class FastSelectMixin:
    # value -> why it cannot be chosen now: shown disabled, the reason after its label.
    unavailable: dict[str, str] = {}

    def render(self, name, value, attrs=None, renderer=None):
        final = self.build_attrs(self.attrs, attrs)
        if self.allow_multiple_selected:
            final["multiple"] = True
        chosen = {str(v) for v in self.format_value(value)}
        parts = [f'<select name="{escape(name)}"{flatatt(final)}>']
        for option_value, label in self.choices:
            if isinstance(label, list | tuple):
                parts.append(f'<optgroup label="{escape(option_value)}">')
                parts.extend(self._option(v, text, chosen, self.unavailable) for v, text in label)
                parts.append("</optgroup>")
            else:
                parts.append(self._option(option_value, label, chosen, self.unavailable))
        parts.append("</select>")
        return mark_safe("".join(parts))

    @staticmethod
    def _option(value, label, chosen: set[str], unavailable: dict[str, str]) -> str:
        text = "" if value is None else str(value)
        selected = " selected" if text in chosen else ""
        why = unavailable.get(text)
        if why:
            label = f"{label} — {why}"
            selected += " disabled"
        return f'<option value="{escape(text)}"{selected}>{escape(label)}</option>'


class FastSelect(FastSelectMixin, forms.Select):
    pass


class FastSelectMultiple(FastSelectMixin, forms.SelectMultiple):
    pass


def speed_up_selects(form: forms.BaseForm) -> None:
    """Swap the form's plain selects for the fast ones, keeping attributes and choices."""
    for field in form.fields.values():
        kind = type(field.widget)
        if kind in (forms.Select, forms.SelectMultiple):
            fast = FastSelect if kind is forms.Select else FastSelectMultiple
            widget = fast(attrs=field.widget.attrs)
            widget.choices = field.choices
            widget.is_required = field.widget.is_required
            field.widget = widget


def word_empty_choices(form: forms.BaseForm) -> None:
    """The empty option of each single-choice list in the console's words, which say
    whether a choice is needed (Django's "- Select an option -" has no Chinese)."""
    for field in form.fields.values():
        single = isinstance(field, forms.ModelChoiceField) and not isinstance(
            field, forms.ModelMultipleChoiceField
        )
        if single and field.empty_label is not None:
            field.empty_label = _("— choose —") if field.required else _("— none —")
