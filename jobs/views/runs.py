"""The live parts of /jobs/<id>/ (SPEC O2): status and events, per-node logs that follow as
they grow, the whole log as a download, resource use over time."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from console.params import whole_number
from jobs.backend import attempt_backend
from jobs.execution import charts
from jobs.models import Attempt, Job
from jobs.permissions import get_job_for_user
from resources.backends.base import BackendError

TAIL_BYTES = 64 * 1024  # what a page shows of a log at first; the download has it all
MORE_BYTES = 256 * 1024  # the most one follow-up request adds


def attempt_of(job: Job, request: HttpRequest) -> Attempt | None:
    """The attempt the query names (404 if it names none of the job's), else the latest."""
    attempts = job.attempts.order_by("-number")
    given = request.GET.get("attempt", "")
    if not given:
        return attempts.first()
    number = whole_number(given)
    if number is None:
        raise Http404
    return get_object_or_404(attempts, number=number)


def log_of(request: HttpRequest, pk: int) -> tuple[Job, Attempt, dict]:
    """The job, attempt and replica whose log a request asks for; 404 for any other."""
    job, _may = get_job_for_user(request.user, pk)
    attempt = attempt_of(job, request)
    if attempt is None:
        raise Http404
    return job, attempt, _replica(attempt, request)


def _replica(attempt: Attempt, request: HttpRequest) -> dict:
    wanted = request.GET.get("replica", "")
    for replica in attempt.replicas:
        if replica["name"] == wanted:
            return replica
    if wanted:
        raise Http404
    entry = [r for r in attempt.replicas if r.get("runs_entry", True)]
    return (entry or attempt.replicas)[0]


def offset_of(request: HttpRequest) -> int:
    offset = whole_number(request.GET.get("offset", "0"))
    if offset is None:
        raise Http404
    return offset


def log_context(job: Job, request: HttpRequest) -> dict:
    """The log panel: which attempt and replica, the tail of its log, where to follow from."""
    attempt = attempt_of(job, request)
    if attempt is None:
        return {"job": job, "attempt": None}
    replica = _replica(attempt, request)
    context = {
        "job": job,
        "attempt": attempt,
        "attempts": list(job.attempts.select_related("subtask", "cluster").order_by("-number")),
        "replica": replica,
        "text": "",
        "offset": 0,
        "cut": False,
        "gone": False,
    }
    try:
        backend = attempt_backend(attempt)
        size = backend.log_size(attempt.workload_id, replica["name"])
        start = max(0, size - TAIL_BYTES)
        text, offset = backend.logs(attempt.workload_id, replica["name"], start, TAIL_BYTES)
    except BackendError:  # cleaned up (or the backend does not answer now)
        context["gone"] = True
        return context
    if start and "\n" in text:  # begin at a whole line
        text = text.split("\n", 1)[1]
    context.update(text=text, offset=offset, cut=start > 0)
    return context


@require_GET
@login_required
def job_live(request: HttpRequest, pk: int) -> HttpResponse:
    """Polled while the job is live: the events as they come; a new phase reloads the page,
    so that status, buttons and panels all show it."""
    job, _may = get_job_for_user(request.user, pk)
    if request.GET.get("phase") != job.phase:
        response = HttpResponse(status=204)
        response["HX-Refresh"] = "true"
        return response
    return render(
        request,
        "jobs/run_live.html",
        {"job": job, "events": job.events.select_related("actor").order_by("-at", "-id")[:200]},
    )


@require_GET
@login_required
def job_logs(request: HttpRequest, pk: int) -> HttpResponse:
    job, _may = get_job_for_user(request.user, pk)
    return render(request, "jobs/run_logs.html", log_context(job, request))


def read_on(attempt: Attempt, replica: dict, offset: int) -> tuple[str, int, bool, bool]:
    """What ``replica``'s log has gained since ``offset``: the text, the offset after it,
    whether the run is live and whether more is already there (the page and the API)."""
    live = attempt.live  # read before the log, so that the last lines are never missed
    try:
        backend = attempt_backend(attempt)
        # An offset past the end (a hand-made address) follows from the end instead.
        offset = min(offset, backend.log_size(attempt.workload_id, replica["name"]))
        text, after = backend.logs(attempt.workload_id, replica["name"], offset, MORE_BYTES)
    except BackendError:
        # No log to read: not written yet (a run just starting: follow on while it is
        # live), or cleaned up, or the backend away (an ended run: nothing more will come).
        text, after = "", offset
    return text, after, live, bool(text) and after - offset >= MORE_BYTES


@require_GET
@login_required
def job_logs_more(request: HttpRequest, pk: int) -> HttpResponse:
    """What the log has gained since ``offset``, and the element that asks again."""
    job, attempt, replica = log_of(request, pk)
    text, after, live, more = read_on(attempt, replica, offset_of(request))
    return render(
        request,
        "jobs/run_log_more.html",
        {
            "job": job,
            "attempt": attempt,
            "replica": replica,
            "text": text,
            "offset": after,
            "follow": live or more,
        },
    )


@require_GET
@login_required
def job_log_download(request: HttpRequest, pk: int) -> HttpResponse:
    job, attempt, replica = log_of(request, pk)
    try:
        backend = attempt_backend(attempt)
        backend.log_size(attempt.workload_id, replica["name"])
    except BackendError:
        raise Http404 from None

    def chunks():
        offset = 0
        while True:
            text, after = backend.logs(attempt.workload_id, replica["name"], offset, 1 << 20)
            if after == offset:
                return
            yield text.encode()
            offset = after

    response = StreamingHttpResponse(chunks(), content_type="text/plain; charset=utf-8")
    name = f"{job.name}-{attempt.number}-{replica['name']}.log"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def usage_context(job: Job, request: HttpRequest) -> dict:
    attempt = attempt_of(job, request)
    if attempt is None:
        return {"job": job, "attempt": None, "replicas": []}
    limits = {r["name"]: r for r in attempt.replicas}
    series: dict[str, dict[str, list]] = {}
    for row in attempt.samples.values_list(
        "replica", "at", "cpu_percent", "memory_mib", "accelerator_util", "accelerator_memory_mib"
    ):
        name, at, cpu, memory, util, accel_memory = row
        found = series.setdefault(name, {"cpu": [], "memory": [], "util": [], "accel": []})
        found["cpu"].append((at, cpu))
        found["memory"].append((at, memory))
        if util is not None:
            found["util"].append((at, util))
        if accel_memory is not None:
            found["accel"].append((at, accel_memory))
    replicas = []
    for name in limits:
        data = series.get(name, {"cpu": [], "memory": [], "util": [], "accel": []})
        shown = [
            charts.line_chart(_("CPU"), "%", data["cpu"], floor_top=100),
            charts.line_chart(_("Memory"), "MiB", data["memory"], limit=limits[name].get("memory")),
        ]
        if data["util"]:
            shown.append(charts.line_chart(_("Accelerator"), "%", data["util"], floor_top=100))
        if data["accel"]:
            shown.append(charts.line_chart(_("Accelerator memory"), "MiB", data["accel"]))
        replicas.append({"name": name, "label": limits[name].get("label", name), "charts": shown})
    return {
        "job": job,
        "attempt": attempt,
        "replicas": replicas if series or attempt.live else [],
        "interval": settings.USAGE_SECONDS,
    }


@require_GET
@login_required
def job_usage(request: HttpRequest, pk: int) -> HttpResponse:
    job, _may = get_job_for_user(request.user, pk)
    return render(request, "jobs/run_usage.html", usage_context(job, request))
