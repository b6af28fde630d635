"""/jobs/new/: the job form, its live refresh, clone (O3) and a job from a dev env (O8)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.forms.utils import ErrorDict
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import trigger_client_event

from console import ratelimit
from console.htmx import render_page
from jobs import export
from jobs.forms import suggestions
from jobs.forms.job import JobForm
from jobs.forms.rows import apply_row_action
from jobs.models import Job
from jobs.permissions import get_devenv_for_user, get_job_for_user
from jobs.services import initial_from_job
from jobs.submission import defaults, submit

CREATED = "created_job"


def _acted_on(request: HttpRequest, action: str) -> JobForm:
    """The form as posted, with a button's action done (a row added or removed, an
    algorithm's suggestion taken), shown again without validating it."""
    user, project = request.user, request.project or None
    data = apply_row_action(request.POST, action)
    if suggestions.acts_on(action):
        data = suggestions.apply(JobForm(data, user=user, project=project), action)
    return _quiet(JobForm(data, user=user, project=project))


def _quiet(form: JobForm) -> JobForm:
    """A bound form shown again without validating it (a refresh, not a submit)."""
    form._errors = ErrorDict()
    form.cleaned_data = {}
    return form


def _render(
    request, form, *, status=200, fragment="content", cloned_from=None, already=None,
    resume=False,
):  # fmt: skip
    return render_page(
        request,
        "jobs/job_form.html",
        {
            "form": form,
            "cloned_from": cloned_from,
            "already_submitted": already,
            "resume": resume,
            # The availability panel stays open across the form's refreshes and submits.
            "availability_open": form.data.get("availability") == "1",
            "availability_rows": form.data.get("availability_rows", ""),
            "prediction_refresh": settings.PREDICTION_REFRESH_SECONDS,
        },
        fragment=fragment,
        status=status,
        only_fragment=fragment == "form_body",
    )


def _namesake(form: JobForm, user) -> Job | None:
    """The user's live job that has the name the form asks for, to link to."""
    if not form.has_error("name", "taken"):
        return None
    return Job.objects.live().filter(owner=user, name=form.data.get("name", "").strip()).first()


def _too_many(request, form, cloned_from, wait: int) -> HttpResponse:
    """Over the submission limit: the form again, as typed, with the reason (not a bare 429
    page that would lose what was typed)."""
    _quiet(form).add_error(None, ratelimit.refusal("submit", wait))
    response = _render(request, form, status=429, cloned_from=cloned_from)
    response["Retry-After"] = str(wait)
    return response


def _form_page(request: HttpRequest, initial: dict, cloned_from=None, resume=False) -> HttpResponse:
    user, project = request.user, request.project or None
    if request.method == "POST":
        action = request.POST.get("row_action")
        if action:
            # Without JavaScript the form's buttons submit the whole form: show it again.
            return _render(request, _acted_on(request, action), cloned_from=cloned_from)
        form = JobForm(request.POST, user=user, project=project)
        wait = ratelimit.hit("submit", user)
        if wait is not None:
            return _too_many(request, form, cloned_from, wait)
        job = submit(form, user=user, project=project, cloned_from=cloned_from)
        if job is not None:
            # The job page says it was created, with its status when the page is drawn:
            # by then it may already be running.
            request.session[CREATED] = job.pk
            return redirect(job)
        messages.error(request, _("The job was not created: see the fields marked below."))
        already = _namesake(form, user)
        return _render(request, form, status=422, cloned_from=cloned_from, already=already)
    return _render(
        request,
        JobForm(initial=initial, user=user, project=project),
        cloned_from=cloned_from,
        resume=resume,
    )


@require_http_methods(["GET", "POST"])
@login_required
def job_new(request: HttpRequest) -> HttpResponse:
    return _form_page(request, defaults())


@require_POST
@login_required
def job_form_refresh(request: HttpRequest) -> HttpResponse:
    """htmx: the form body again, with the dependent parts for what is typed now. Its fields
    are disabled while this is asked, so a prediction asked meanwhile saw none of them: the
    answer tells the page to ask again once the body is back (``form-refreshed``)."""
    form = _acted_on(request, request.POST.get("row_action", ""))
    response = _render(request, form, fragment="form_body")
    trigger_client_event(response, "form-refreshed", after="settle")
    return response


@require_http_methods(["GET", "POST"])
@login_required
def job_clone(request: HttpRequest, pk: int) -> HttpResponse:
    job, _may_change = get_job_for_user(request.user, pk)
    resume = request.GET.get("resume") == "1"
    initial = {**defaults(), **initial_from_job(job, resume=resume)}
    return _form_page(request, initial, cloned_from=job, resume=resume)


@require_http_methods(["GET", "POST"])
@login_required
def job_from_devenv(request: HttpRequest, pk: int) -> HttpResponse:
    env = get_devenv_for_user(request.user, pk)
    initial = {
        **defaults(),
        "name": env.name,
        "image": env.image_id,
        "specs": [env.spec_id],
        "algorithm": env.algorithm_id,
        "command": env.command,
        "dataset_count": env.dataset_versions.count(),
    }
    for i, version in enumerate(env.dataset_versions.all()):
        initial[f"dataset_{i}_version"] = version.pk
        initial[f"dataset_{i}_read_only"] = True
    return _form_page(request, initial)


@require_POST
@login_required
def job_form_export(request: HttpRequest) -> HttpResponse:
    """The form as it stands, as job.yaml (SPEC I3): what was typed in the browser is what
    a script submits. Nothing is checked or made; the file is downloaded."""
    name = request.POST.get("name", "") or "job"
    text = export.as_yaml(request.POST, user=request.user, project=request.project or None)
    response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
    safe = "".join(c for c in name if c.isalnum() or c in "-_")[:40] or "job"
    response["Content-Disposition"] = f'attachment; filename="{safe}.yaml"'
    return response
