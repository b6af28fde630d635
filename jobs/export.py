"""job.yaml: a job as the job form's fields (SPEC I3), the format ``console-cli submit``
reads and the API takes. Choices are written by name, so that a file reads as the form does
and still means the same job on another day (ids are the console's own business).

What the form would start with anyway (its defaults, empty fields, options left off) is left
out, so a file holds what makes this job this job.
"""

from __future__ import annotations

import yaml
from django import forms

from jobs.forms import choices
from jobs.forms.job import JobForm
from jobs.submission import defaults

# Always written, even where they equal the form's defaults: a reader sees the job's shape.
ALWAYS = ("name", "mode", "specs", "node_count", "image", "duration_hours")
HEADER = "# A training job: `console-cli submit job.yaml`, or the API's POST /api/v1/jobs.\n"


def _named(field, value):
    """``value`` (an id, or ids) of a model choice as the choice's name where it has one."""
    queryset = choices.named(field)
    many = isinstance(field, forms.ModelMultipleChoiceField)
    values = value if isinstance(value, list | tuple) else [value]
    if queryset is None:
        return values if many else value
    ids = [int(v) for v in values if str(v).isdigit()]
    names = dict(queryset.filter(pk__in=ids).values_list("pk", "name"))
    found = [names.get(int(v), v) if str(v).isdigit() else v for v in values]
    return found if many else found[0]


def _typed(field, value):
    if isinstance(field, forms.BooleanField):
        return value not in (None, "", False, "false", "off", "0")
    if isinstance(field, forms.IntegerField | forms.TypedChoiceField) and str(value).isdigit():
        return int(value)
    return value


def fields_of(data, *, user, project) -> dict:
    """The job.yaml mapping of ``data``: a posted form (a QueryDict) or a job's form data
    (``services.initial_from_job``)."""
    form = JobForm(user=user, project=project)
    start = defaults()
    found: dict = {}
    if project is not None:
        found["project"] = project.slug
    for name, field in form.fields.items():
        if hasattr(data, "getlist") and isinstance(field, forms.MultipleChoiceField):
            value = data.getlist(name)
        else:
            value = data.get(name)
        if value in (None, "", []):
            continue
        value = _typed(field, _named(field, value))
        initial = start.get(name, field.initial)
        if name not in ALWAYS and (value == initial or (value is False and not initial)):
            continue
        found[name] = value
    # The rows' fields (datasets; sub-tasks of a batch job) as the form names them.
    rows = ("dataset", "subtask") if found.get("job_type") == "batch" else ("dataset",)
    for name in data:
        value = data.get(name)
        if name.split("_")[0] in rows and value not in (None, "", 0, "0"):
            found[name] = _typed(forms.IntegerField(), value)
    return found


def as_yaml(data, *, user, project) -> str:
    text = yaml.safe_dump(fields_of(data, user=user, project=project), allow_unicode=True,
                          sort_keys=False, default_flow_style=None)  # fmt: skip
    return HEADER + text
