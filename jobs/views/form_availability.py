"""/jobs/new/availability/: the job form's availability panel (SPEC J25) for its choices.

htmx posts the whole form, so the panel answers for the specs, node count, pool, pinned
nodes and driver chosen there: the same question the prediction beside Create answers
(:mod:`resources.placement.answer`), without the queue. The panel stays on the form: nothing in it
links or pushes another address.
"""

from __future__ import annotations

from dataclasses import replace

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from console.params import whole_number
from jobs.admission import prediction
from jobs.admission.words import Names, say
from jobs.forms.job import DraftForm
from resources.placement import availability

ROWS = 10
MAX_ROWS = 200


def panel_context(form: DraftForm, user, project, rows: int) -> dict:
    form.is_valid()  # the fields valid so far are enough, as for the prediction
    draft = prediction.draft_from(form.cleaned_data, project)
    if draft is None:
        return {"draft": None}
    result = availability.compute(
        user,
        project,
        spec_ids=[alternative.spec_id for alternative in draft.alternatives],
        rules=draft,
        need=draft.alternatives[0].min_nodes,
    )
    shown = result.rows[:rows]
    availability.describe_rows(shown, result.chosen)
    queue_answers(result.summaries, draft)
    pool = result.summaries[0].answers[0].pool if result.summaries else None
    return {
        "draft": draft,
        "result": result,
        "shown": shown,
        "rows": rows,
        "more": min(len(result.rows), MAX_ROWS) if len(result.rows) > rows else 0,
        "pool": pool,
        "driver": form.cleaned_data.get("driver_version"),
        "idle_count": sum(1 for row in result.rows if row.status == availability.IDLE),
    }


def queue_answers(summaries, draft) -> None:
    """Set ``submitted`` on each spec that could start: what the prediction beside Create
    says of a job of this spec alone submitted now, queue included ("now", or "queue" with
    why in ``submitted_why``); left None while the process has no plan yet."""
    alternatives = {alternative.spec_id: alternative for alternative in draft.alternatives}
    names = Names()
    for summary in summaries:
        alternative = alternatives.get(summary.spec.pk)
        if summary.never or alternative is None:
            continue
        alone = replace(draft, alternatives=(alternative,))
        said = prediction.forecast_only(alone)
        if said.starts_now:
            summary.submitted = "now"
        else:
            summary.submitted, summary.submitted_why = "queue", say(said.reason, names)


@require_POST
@login_required
def job_form_availability(request: HttpRequest) -> HttpResponse:
    """The panel open (``availability=1``) for what the form holds now, or closed."""
    project = request.project or None
    context = {"open": request.POST.get("availability") == "1"}
    if context["open"]:
        form = DraftForm(request.POST, user=request.user, project=project)
        rows = whole_number(request.POST.get("availability_rows"), low=ROWS, high=MAX_ROWS)
        context.update(panel_context(form, request.user, project, rows or ROWS))
    response = render(request, "jobs/form_availability.html", context)
    response["Cache-Control"] = "no-store"
    return response
