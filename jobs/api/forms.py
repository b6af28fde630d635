"""A JSON body as the job form's data: the API's fields are the form's, and a choice may be
given by name (``"image": "pytorch-2"``, ``"specs": ["a100-1"]``) as well as by id."""

from __future__ import annotations

import math
import re

from django import forms
from django.utils.translation import gettext as _
from ninja.errors import HttpError

from console.models import Project
from jobs.forms import choices
from jobs.forms.job import JobForm
from jobs.submission import defaults

SLUG = re.compile(r"[-\w]{1,100}")


def project_of(request, slug) -> Project:
    """The project a job is for: ``slug`` if the caller is in it, else their current one."""
    projects = Project.objects.for_user(request.user).order_by("name")
    if slug in (None, ""):
        chosen = request.session.get("project_id") if hasattr(request, "session") else None
        project = projects.filter(pk=chosen).first() or projects.first()
        if project is None:
            raise HttpError(422, _("You are in no project: an admin must add you to one."))
        return project
    text = str(slug)
    # A slug is letters, digits, - and _: anything else (a NUL among them, which PostgreSQL
    # text cannot hold) names no project, without asking the database.
    project = projects.filter(slug=text).first() if SLUG.fullmatch(text) else None
    if project is None:
        raise HttpError(422, _("No project %(slug)s of yours.") % {"slug": slug})
    return project


def bound_form(payload: dict, *, user, project, kind=JobForm):
    """The job form (or ``kind``, its draft) bound to ``payload``, its named choices turned
    into the form's ids."""
    empty = kind(initial=defaults(), user=user, project=project)
    data = {}
    for name, field in empty.fields.items():  # what is left out is what the form starts with
        initial = empty.get_initial_for_field(field, name)
        if initial not in (None, "", []) and name not in payload:
            data[name] = _by_name(field, initial)
    for name, value in payload.items():
        if name == "project":
            continue
        field = empty.fields.get(name)
        data[name] = _by_name(field, value) if field is not None else _plain(value)
    return kind(data, user=user, project=project)


def _plain(value):
    """A JSON value as a form post carries it. JSON may hold a lone surrogate, which no
    posted form can (Django decodes a post's bytes, replacing what is not UTF-8): it is
    replaced the same way, so the form sees text it can check, store or refuse."""
    if isinstance(value, bool):
        return "on" if value else ""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, float) and not math.isfinite(value):
        # JSON as Python reads it holds Infinity and NaN; a post holds text, and a choice's
        # id of "inf" is refused as any other bad id is (a float one overflowed).
        return str(value)
    return "" if value is None else value


def _by_name(field, value):
    """``value`` for ``field``, shaped as a posted form gives it: a list for a field of many
    choices, one value for the others; a model choice named rather than numbered becomes
    its id (among the choices the form offers this user, so naming reaches nothing more)."""
    if isinstance(field, forms.BooleanField):
        return bool(value) and value not in ("false", "0", "off")
    many = isinstance(field, forms.MultipleChoiceField | forms.ModelMultipleChoiceField)
    values = [_plain(v) for v in (value if isinstance(value, list) else [value])]
    queryset = choices.named(field)
    if queryset is not None:
        # _plain replaced lone surrogates; a NUL, which PostgreSQL cannot hold, names nothing.
        named = [v for v in values if isinstance(v, str) and not v.isdigit() and "\x00" not in v]
        ids = dict(queryset.filter(name__in=named).values_list("name", "pk")) if named else {}
        values = [ids.get(v, v) if isinstance(v, str) else v for v in values]
    if many:
        return values
    if isinstance(value, list):  # one value wanted, several given: the form says so
        return values
    return values[0]
