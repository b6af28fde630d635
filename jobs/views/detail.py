"""/jobs/<id>/: configuration, /workspace layout, effective launch, events, logs, usage."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from console import limits
from console.htmx import render_page
from jobs import launching
from jobs.admission.prediction import describe_blockers
from jobs.admission.words import word_jobs
from jobs.faults import watch
from jobs.faults.idle import found_idle
from jobs.faults.recovery import counts_left
from jobs.models import FaultRecord, Job, JobPrediction, JobType, Priority
from jobs.permissions import get_job_for_user
from jobs.terminal import access as terminal_access
from jobs.tools.service import live_tool
from jobs.views.runs import log_context, usage_context
from jobs.workspace import job_mounts
from resources.catalog import storage

DETAIL_QUERYSET = (
    Job.objects.select_related(
        "owner", "project", "image", "algorithm", "driver_version", "pool", "spec"
    )
    .prefetch_related("spec_choices__spec__accelerator_model", "subtasks__algorithm")
    .annotate(idle_since=found_idle())
)


def continues_from(job: Job, user) -> Job | None:
    """The latest earlier job (that ``user`` may see) whose output folder holds this job's:
    this job finds its files, checkpoints included. Only ever on purpose (a path typed, or
    a clone asked to resume), and the page says so."""
    return (
        Job.objects.visible_to(user)
        .filter(
            output_path__in=storage.enclosing_folders(job.output_path),
            created_at__lt=job.created_at,
        )
        .exclude(pk=job.pk)
        .only("pk", "name")
        .order_by("-created_at")
        .first()
    )


def recovery_summary(job: Job) -> str:
    used, allowed = counts_left(job)
    words = {"used": used, "allowed": allowed}
    if job.resume_enabled:
        return _("Checkpoint resume: %(used)s of %(allowed)s used") % words
    if job.fault_restart_enabled:
        return _("Fault restart: %(used)s of %(allowed)s used") % words
    return _("No fault recovery: a fault ends the job as error")


def fault_timeline(job: Job) -> list[FaultRecord]:
    """The job's fault records (one query), each with its count in words: "resume 1 of 3"
    is the first of three resumes, used by this fault."""
    Action = FaultRecord.Action
    records = list(job.faults.all())
    for record in records:
        words = {"used": record.used, "allowed": record.allowed}
        # Growing, an alert or nothing yet spends no count: no count to show.
        if not record.allowed or record.action not in (Action.RESUME, Action.RESTART, Action.ERROR):
            record.counts = ""
        elif record.action == Action.RESTART or (
            record.action == Action.ERROR and not job.resume_enabled
        ):
            record.counts = _("restart %(used)s of %(allowed)s") % words
        else:
            record.counts = _("resume %(used)s of %(allowed)s") % words
    return records


def entry_launch(launch: list[launching.NodeLaunch]) -> launching.NodeLaunch | None:
    """The node whose launch runs the user's command (worker 0 in every mode): the one
    launch command worth showing beside the command as typed."""
    return next((node for node in launch if node.runs_entry), None)


def words(command: str) -> list[str]:
    """``command`` cut at its spaces, as :attr:`launching.NodeLaunch.words`: joined with
    single spaces, the words are the command again, character for character."""
    return command.split(" ")


def typed_commands(job: Job) -> list[tuple[int, list[str]]]:
    """The commands exactly as the user typed them, as :func:`words`: (sub-task number,
    words) for a batch job, else one pair with number 0."""
    if job.job_type == JobType.BATCH:
        return [
            (task.index + 1, words(task.command))
            for task in sorted(job.subtasks.all(), key=lambda t: t.index)
        ]
    return [(0, words(job.command))]


def terminal_links(job: Job, may_change: bool) -> dict | None:
    """The debug terminal's links, one per node, while it can be opened (SPEC J20): only for
    those who may change the job (SPEC P)."""
    if not (may_change and job.debug_terminal):
        return None
    attempt = terminal_access.latest_attempt(job)
    if not terminal_access.open_now(job, attempt):
        return None
    return {
        "replicas": terminal_access.replicas_of(attempt),
        "kept_until": terminal_access.kept_until(job, attempt),
    }


def announce_created(request: HttpRequest, job: Job) -> None:
    """Right after Create: say so, with the status the job has as this page is drawn (it
    may have started, or even ended, since the form was sent)."""
    from jobs.views.form import CREATED

    if request.session.get(CREATED) != job.pk:
        return
    del request.session[CREATED]
    messages.success(
        request,
        _("Job %(name)s created. Status now: %(status)s.")
        % {"name": job.name, "status": job.get_status_display()},
    )


@require_GET
@login_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job, may_change = get_job_for_user(request.user, pk, queryset=DETAIL_QUERYSET)
    announce_created(request, job)
    priorities = [
        (value, label)
        for value, label in Priority.choices
        if value != Priority.VERY_URGENT or request.user.is_staff
    ]
    prediction = JobPrediction.objects.filter(job=job).first()
    blockers = describe_blockers(job.blockers, request.user) if job.blockers else []
    word_jobs([job])
    faults = fault_timeline(job)
    launch = launching.effective_launch(job)
    entry = entry_launch(launch)
    return render_page(
        request,
        "jobs/job_detail.html",
        {
            "prediction": prediction,
            "prediction_held": prediction.held(job.started_at) if prediction else None,
            "blockers": blockers,
            "job": job,
            "may_change": may_change,
            "terminal": terminal_links(job, may_change),
            "specs": [choice.spec for choice in job.spec_choices.all()],
            "mounts": job_mounts(job),
            "launch": launch,
            "entry_launch": entry,
            "launch_words": entry.words if entry and entry.command != job.command else [],
            "commands": typed_commands(job),
            "events": job.events.select_related("actor").order_by("-at", "-id")[:200],
            "durations": limits.current().durations_hours,
            "priorities": priorities,
            "attempts": job.attempts.select_related("subtask", "cluster").order_by("-number"),
            "log": log_context(job, request),
            "continues_from": continues_from(job, request.user),
            "usage": usage_context(job, request),
            "tensorboard": live_tool(job=job),
            "watch": watch.summary(job),
            "faults": faults,
            "recovery_summary": recovery_summary(job) if faults or job.fault_tolerant else "",
        },
    )
