"""/jobs/new/predict/: the queue prediction beside the Create button (SPEC J24)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from jobs.admission import prediction, refusals
from jobs.forms.job import DraftForm


def context_for(form: DraftForm, user, project) -> dict:
    """What the prediction panel shows for the form's current values."""
    form.is_valid()  # the fields that are valid so far are enough to predict
    draft = prediction.draft_from(form.cleaned_data, project)
    if draft is None:
        return {"forecast": None}
    plan = prediction.current_plan()
    refusal = refusals.refusal(draft, plan)
    if refusal:
        return {"forecast": True, "refusal": refusal}
    caveat = None
    if form.cleaned_data.get("resume_enabled"):
        caveat = refusals.resume_caveat(draft)
    result = prediction.explain(draft, user, plan)
    specs = {spec.pk: spec.name for spec in form.cleaned_data.get("specs") or []}
    from resources.models import NodeSpec

    name = (
        specs.get(result.prediction.spec_id)
        or NodeSpec.objects.filter(pk=result.prediction.spec_id)
        .values_list("name", flat=True)
        .first()
    )
    return {
        "forecast": result,
        "spec_name": name,
        "first_spec_id": draft.alternatives[0].spec_id,
        "resume_caveat": caveat,
        "resumes": bool(form.cleaned_data.get("resume_enabled")),
    }


@require_POST
@login_required
def job_form_predict(request: HttpRequest) -> HttpResponse:
    project = request.project or None
    form = DraftForm(request.POST, user=request.user, project=project)
    response = render(request, "jobs/prediction.html", context_for(form, request.user, project))
    response["Cache-Control"] = "no-store"
    return response
