"""/usage/: board-hours, CPU core-hours and memory GiB-hours from the ledger (SPEC G4) by
project, member or pool, per day, week or month, as a chart, a table and a CSV file.

Who sees what: a platform admin, everything; anyone else, the projects they work in. By
member, a project's lead (or project admin) sees each member of it; in the projects they do
not lead, people see their own use only.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from datetime import UTC, timedelta
from decimal import Decimal

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET

from console.htmx import render_page
from console.models import Membership, Project
from console.models.projects import LEAD_ROLES
from resources.models import ResourcePool
from resources.usage import MEASURES, bucket_starts, usage_in

PERIODS = (7, 30, 90)  # days
CHART_WIDTH, CHART_HEIGHT = 600, 120


class UsageForm(forms.Form):
    days = forms.TypedChoiceField(label=_("Period"), coerce=int, initial=30)
    unit = forms.ChoiceField(
        label=_("Per"), initial="day",
        choices=[("day", _("day")), ("week", _("week")), ("month", _("month"))],
    )  # fmt: skip
    by = forms.ChoiceField(
        label=_("By"), initial="project",
        choices=[("project", _("project")), ("owner", _("member")), ("pool", _("pool"))],
    )  # fmt: skip
    measure = forms.ChoiceField(
        label=_("Chart of"), initial="board_hours",
        choices=[("board_hours", _("board-hours")), ("cpu_hours", _("CPU core-hours")),
                 ("memory_gib_hours", _("memory GiB-hours"))],
    )  # fmt: skip

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Worded here, in the reader's language (a lazy plural with its number is worded
        # as soon as it is given the number).
        self.fields["days"].choices = [
            (days, ngettext("Last %(n)d day", "Last %(n)d days", days) % {"n": days})
            for days in PERIODS
        ]


def _choices(request: HttpRequest) -> tuple[UsageForm, dict]:
    """The form as sent, and the values to show: each field's own, or its default where the
    value sent is not one of its choices (said next to the field)."""
    form = UsageForm({name: request.GET.get(name, field.initial)
                      for name, field in UsageForm.base_fields.items()})  # fmt: skip
    form.is_valid()
    chosen = {name: field.initial for name, field in form.fields.items()}
    chosen |= form.cleaned_data
    return form, chosen


def _parts(user, by: str) -> list[tuple[list[int] | None, int | None]]:
    """(projects, owner) of each part of the ledger the user may see, grouped ``by``: None
    for every project, or for every owner."""
    if user.is_staff:
        return [(None, None)]
    roles = dict(Membership.objects.filter(user=user).values_list("project_id", "role"))
    if by != "owner":
        return [(list(roles), None)] if roles else []
    led = [project for project, role in roles.items() if role in LEAD_ROLES]
    others = [project for project, role in roles.items() if role not in LEAD_ROLES]
    return [part for part in ((led, None), (others, user.pk)) if part[0]]


def _names(by: str, keys) -> dict:
    ids = [key for key in keys if key is not None]
    if by == "project":
        found = dict(Project.objects.filter(pk__in=ids).values_list("pk", "name"))
    elif by == "owner":
        found = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
    else:
        found = dict(ResourcePool.objects.filter(pk__in=ids).values_list("pk", "name"))
    none = _("Shared nodes") if by == "pool" else _("Not recorded")
    return {key: found.get(key, none) if key is not None else none for key in keys}


def _chart(buckets: list, totals: dict) -> dict:
    """A bar for each bucket with use, placed on the axis of every bucket of the period,
    scaled to the tallest."""
    top = max(totals.values(), default=Decimal(0))
    step = CHART_WIDTH / max(len(buckets), 1)
    bars = []
    for i, bucket in enumerate(buckets):
        hours = totals.get(bucket, Decimal(0))
        if hours and top:
            height = max(float(hours / top) * (CHART_HEIGHT - 4), 1.0)
            bars.append({"x": i * step + step * 0.1, "width": step * 0.8,
                         "y": CHART_HEIGHT - height, "height": height, "bucket": bucket,
                         "hours": hours})  # fmt: skip
    return {
        "bars": bars,
        "top": top,
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "first": buckets[0] if buckets else None,
        "last": buckets[-1] if buckets else None,
    }


@require_GET
@login_required
def usage(request: HttpRequest) -> HttpResponse:
    form, chosen = _choices(request)
    by, unit, measure = chosen["by"], chosen["unit"], chosen["measure"]
    end = timezone.now()
    start = end - timedelta(days=chosen["days"])
    # (bucket, holder) -> the hours of each measure, in MEASURES' order
    used: dict[tuple, list[Decimal]] = defaultdict(lambda: [Decimal(0)] * len(MEASURES))
    for projects, owner in _parts(request.user, by):
        for row in usage_in(start, end, by=by, unit=unit, now=end, projects=projects,
                            owner=owner):  # fmt: skip
            sums = used[row.bucket, row.key]
            for i, name in enumerate(MEASURES):
                sums[i] += getattr(row, name)
    names = _names(by, {key for _bucket, key in used})
    if request.GET.get("export") == "csv":
        return _csv(used, names, by, unit, chosen["days"])
    shown = MEASURES.index(measure)
    per_key: dict = defaultdict(lambda: [Decimal(0)] * len(MEASURES))
    per_bucket: dict = defaultdict(Decimal)
    for (bucket, key), sums in used.items():
        per_key[key] = [a + b for a, b in zip(per_key[key], sums, strict=True)]
        per_bucket[bucket] += sums[shown]
    total = sum((sums[shown] for sums in per_key.values()), Decimal(0))
    rows = [
        {"name": names[key], "hours": sums,
         "share": float(sums[shown] / total * 100) if total else 0}
        for key, sums in sorted(per_key.items(),
                                key=lambda kv: (-kv[1][shown], str(names[kv[0]])))
    ]  # fmt: skip
    buckets = bucket_starts(timezone.localtime(start, UTC), end, unit)
    query = request.GET.copy()
    query["export"] = "csv"
    return render_page(
        request,
        "resources/usage.html",
        {
            "fields": [(form[name], chosen[name]) for name in form.fields],
            "by_label": dict(form.fields["by"].choices)[by],
            "unit_label": dict(form.fields["unit"].choices)[unit],
            "measure_label": dict(form.fields["measure"].choices)[measure],
            "rows": rows,
            "total": total,
            "chart": _chart(buckets, per_bucket),
            "start": start,
            "end": end,
            "csv_query": query.urlencode(),
            "sees_everything": request.user.is_staff,
        },
    )


def _csv(used: dict, names: dict, by: str, unit: str, days: int) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="usage-{days}d-by-{by}-per-{unit}.csv"'
    writer = csv.writer(response)
    writer.writerow([unit, {"owner": "member"}.get(by, by), *MEASURES])
    for (bucket, key), sums in sorted(used.items(), key=lambda kv: (kv[0][0], -kv[1][0])):
        writer.writerow([bucket.date().isoformat(), names[key], *(f"{v:.3f}" for v in sums)])
    return response
