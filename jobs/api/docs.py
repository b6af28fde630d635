"""/api/v1/docs/: the API's operations, read from its OpenAPI document and drawn as a console
page (in the reader's language, with no script of a third party's), with the job form's
fields, which are the fields a job is made of."""

from __future__ import annotations

import re

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from console.htmx import render_page
from jobs.forms import rows
from jobs.forms.job import JobForm

METHODS = ("get", "post", "put", "patch", "delete")
ROW = re.compile(r"^(\w+?)_\d+_(\w+)$")


def coded(text: str) -> SafeString:
    """``text`` escaped, its `names` set as code (the OpenAPI document's Markdown)."""
    parts = escape(text).split("`")
    return mark_safe("".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts)))


def job_fields(form) -> list[dict]:
    """The job form's fields, a row's fields (datasets, sub-tasks) once, as ``<n>``."""
    found, seen = [], set()
    for name, field in form.fields.items():
        row = ROW.match(name)
        if row:
            name = f"{row[1]}_<n>_{row[2]}"
            if name in seen:
                continue
        seen.add(name)
        found.append({"name": name, "label": field.label, "help": field.help_text,
                      "required": field.required and not row})  # fmt: skip
    for kind in (rows.DATASETS, rows.SUBTASKS):
        found.append({"name": kind.count_field(), "label": _("How many rows"), "help": "",
                      "required": False})  # fmt: skip
    return found


def operations(schema: dict) -> list[dict]:
    """Each operation of ``schema``, in the document's order: method, path, what it does,
    its parameters and its answers."""
    found = []
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            if method not in item:
                continue
            operation = item[method]
            found.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "summary": _(operation.get("summary", "")),
                    "description": coded(_(operation.get("description", ""))),
                    "parameters": [
                        {
                            "name": p["name"],
                            "where": p["in"],
                            "required": p.get("required", False),
                            "type": p.get("schema", {}).get("type", ""),
                        }
                        for p in operation.get("parameters", [])
                    ],
                    "answers": sorted(operation.get("responses", {})),
                    "body": body_of(schema, operation),
                    "anchor": operation.get("operationId", f"{method}-{path}"),
                }
            )
    return found


def body_of(schema: dict, operation: dict) -> list[str] | None:
    """What a request's body holds: the names of its schema's fields, [] for the job's
    fields (a free mapping: the job form's), None for no body."""
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if content is None:
        return None
    ref = content.get("schema", {}).get("$ref", "")
    if not ref:
        return []
    named = schema.get("components", {}).get("schemas", {}).get(ref.rsplit("/", 1)[-1], {})
    return list(named.get("properties", {}))


@require_GET
@login_required
def api_docs(request: HttpRequest) -> HttpResponse:
    from jobs.api import api

    shown = {rows.DATASETS.count_field(): 1, rows.SUBTASKS.count_field(): 1}  # one of each row
    form = JobForm(initial=shown, user=request.user, project=request.project or None)
    fields = job_fields(form)
    return render_page(
        request,
        "jobs/api_docs.html",
        {
            "operations": operations(api.get_openapi_schema()),
            "fields": fields,
            "base": request.build_absolute_uri("/api/v1"),
        },
    )
