"""Submitting a job: one path for the form and the API (SPEC I1), so that a job one refuses
the other refuses with the same words, on the same field.

``submit`` takes a bound :class:`~jobs.forms.job.JobForm`: its own checks, then whether the
job could ever start on this inventory (the prediction's refusal), then the save, whose
races (the same name sent twice at once, the last urgent place taken meanwhile) become
field errors too. The caller shows ``form.errors`` its own way: a page, or JSON.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from console import limits
from jobs.admission import prediction, refusals
from jobs.forms import rules
from jobs.models import Job
from jobs.operations import UrgentCapReached
from jobs.services import AlreadySubmitted, create_job


def defaults() -> dict:
    """What a new job's form holds before anything is typed; the API takes the same for the
    fields a request leaves out."""
    offered = limits.current().durations_hours
    return {
        "duration_hours": next((h for h in offered if h >= 24), offered[-1]),
        "graceful_shutdown_seconds": 30,
        "node_count": 1,
        "ps_count": 0,
        "algorithm_read_only": True,
    }


def submit(form, *, user, project, cloned_from: Job | None = None, via: str = "") -> Job | None:
    """The job ``form`` describes, created; None with the reasons on ``form`` when it is not.
    ``via``: how it came ("api"), for its first event."""
    draft = prediction.draft_from(form.cleaned_data, project) if form.is_valid() else None
    refusal = refusals.refusal(draft) if draft else None
    if refusal:
        message = _("This job could never start: %(why)s.") % {"why": refusal.text}
        form.add_error("specs", f"{message} {refusal.hint}".strip())
    if not form.is_valid():
        return None
    try:
        job = create_job(form.cleaned_data, user=user, project=project, form=form,
                         cloned_from=cloned_from, via=via)  # fmt: skip
    except AlreadySubmitted:  # the same job sent twice at once (a double click)
        form.add_error("name", rules.name_taken(form.cleaned_data["name"]))
        return None
    except UrgentCapReached as exc:  # a concurrent submit took the last urgent place
        form.add_error("priority", rules.urgent_cap_message(exc.project, exc.held, exc.cap))
        return None
    prediction.remember(job, draft, user)
    return job
