"""Queue prediction for the job form (SPEC J24) and at submit, from the admission model.

The web process plans the queue at most every few seconds and answers drafts from that
plan (``forecast`` costs one search, not a re-plan), so typing in the form stays fast
whatever the queue's length.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import NamedTuple

from django.utils import timezone
from django.utils.translation import gettext as _

from jobs.models import Job, Priority
from jobs.queue_words import Names, say, why_never
from jobs.scheduling import core, forecast, never_fits
from jobs.scheduling.data import Alternative, Prediction, QueuedJob, SchedNode
from jobs.scheduling.db import epoch, load, moment, sched_nodes
from resources import placement
from resources.availability import demand_of, project_pools
from resources.models import Node, NodeSpec
from resources.placement_words import elsewhere_text

PLAN_SECONDS = 5.0
DRAFT_ID = -1

_lock = threading.Lock()
_forecast_lock = threading.Lock()
_cached: tuple[float, core.Schedule] | None = None


def replay(state) -> core.Schedule:
    """The last pass's plan rebuilt from the reservations it stored (no full re-plan)."""
    return core.replay(state.nodes, state.running, state.queue, state.now, state.committed)


_refreshing = threading.Event()


def _refresh() -> None:
    global _cached
    try:
        schedule = replay(load())
        with _lock:
            _cached = (time.monotonic(), schedule)
    finally:
        from django.db import connection

        connection.close()  # this thread's own connection
        _refreshing.clear()


WAIT_FOR_FIRST_PLAN = 2.0
# Tests build the plan in the request's own thread, which sees their uncommitted rows.
BUILD_IN_THREAD = True


class NotReady(Exception):
    """The process has no plan yet and is building one: ask again in a moment."""


def current_schedule(wait: float = WAIT_FOR_FIRST_PLAN) -> core.Schedule:
    """The queue as the admission model sees it (rebuilt every few seconds, in a thread).

    Requests never build the plan themselves: they answer from the last one, or wait a
    moment for the first and otherwise raise NotReady, so a long queue never holds up a
    web worker.
    """
    global _cached
    with _lock:
        cached = _cached
    stale = cached is None or time.monotonic() - cached[0] > PLAN_SECONDS
    if stale and not BUILD_IN_THREAD:
        schedule = replay(load())
        with _lock:
            _cached = (time.monotonic(), schedule)
        return schedule
    if stale and not _refreshing.is_set():
        _refreshing.set()
        threading.Thread(target=_refresh, daemon=True).start()
    if cached is None:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            time.sleep(0.02)
            with _lock:
                if _cached is not None:
                    return _cached[1]
        raise NotReady
    return cached[1]


def forget_schedule() -> None:
    global _cached
    with _lock:
        _cached = None


def draft_from(data: dict, project, *, job_id: int = DRAFT_ID) -> QueuedJob | None:
    """A QueuedJob for the form's (partly) cleaned data; None while no spec is chosen."""
    specs = list(data.get("specs") or [])
    if not specs:
        return None
    nodes = max(1, min(data.get("node_count") or 1, 1000))
    minimum = data.get("elastic_min_nodes") if data.get("elastic") else None
    minimum = min(minimum, nodes) if minimum else None
    pools = project_pools(project)
    return QueuedJob(
        id=job_id,
        alternatives=tuple(Alternative(s.pk, demand_of(s), nodes, minimum) for s in specs),
        duration=float((data.get("duration_hours") or 24) * 3600),
        priority=data.get("priority") or Priority.NORMAL,
        submitted_at=epoch(timezone.now()),
        node_names=frozenset(node.name for node in data.get("node_names") or ()),
        pool=getattr(data.get("pool"), "pk", None),
        driver=getattr(data.get("driver_version"), "pk", None),
        allowed_pools=pools,
    )


def whole_inventory() -> list[SchedNode]:
    """Every live node, idle: what a job could ever run on."""
    return sched_nodes(Node.objects.live())


class Refusal(NamedTuple):
    """Why a draft could never start, and where it could instead ("" if nowhere)."""

    text: str
    hint: str


def refusal(draft: QueuedJob) -> Refusal | None:
    """Why the draft could never start on this inventory, in words, with the other places
    its project may use where it could; None if it could start as it is.

    /cluster/ and the form's availability panel give the same answer
    (:mod:`resources.placement`)."""
    nodes = whole_inventory()
    reason = never_fits(nodes, draft)
    if reason is None:
        return None
    names = Names()
    wants = [(alternative.demand, alternative.min_nodes) for alternative in draft.alternatives]
    hint = elsewhere_text(placement.elsewhere(nodes, draft, wants), names)
    return Refusal(why_never(reason, names), hint)


@dataclass
class Forecast:
    prediction: Prediction
    text: str
    latest_start: object
    blockers: list[tuple[str, str, object]]  # (name, url or "", ends at)
    suggestions: list[str]


def forecast_only(draft: QueuedJob, wait: float = WAIT_FOR_FIRST_PLAN) -> Prediction:
    """The prediction alone (no suggestions, no blockers' names): for the availability
    panel, which asks it of each spec."""
    schedule = current_schedule(wait)
    with _forecast_lock:
        return forecast(schedule, draft)


def explain(draft: QueuedJob, user, wait: float = WAIT_FOR_FIRST_PLAN) -> Forecast:
    schedule = current_schedule(wait)
    same_models = {alt.demand.model for alt in draft.alternatives}
    chosen = {alt.spec_id for alt in draft.alternatives}
    nodes = draft.alternatives[0].nodes
    others = [
        Alternative(spec.pk, demand_of(spec), nodes)
        for spec in NodeSpec.objects.live()
        if spec.pk not in chosen and spec.accelerator_model_id in same_models
    ]
    # The plan is shared by the process's threads, and a forecast caches profiles in it.
    with _forecast_lock:
        prediction = forecast(schedule, draft, others)
    names = Names()
    text = say(prediction.reason, names) if prediction.reason else ""
    return Forecast(
        prediction=prediction,
        text=text,
        latest_start=moment(prediction.latest_start),
        blockers=describe_blockers(prediction.blockers, user),
        suggestions=_suggestions(prediction, names),
    )


def describe_blockers(ids, user) -> list[tuple[str, str, object]]:
    """(name, link, ends by) of the jobs whose end frees a reservation; jobs the user may
    not see are named by their project only."""
    visible = set(Job.objects.visible_to(user).filter(pk__in=ids).values_list("pk", flat=True))
    rows = Job.objects.filter(pk__in=ids).values_list("pk", "name", "project__name", "deadline")
    found = []
    for pk, name, project, deadline in rows:
        if pk in visible:
            found.append((name, f"/jobs/{pk}/", deadline))
        else:
            found.append((_("a job of project %(p)s") % {"p": project}, "", deadline))
    return found


def _suggestions(prediction: Prediction, names: Names) -> list[str]:
    words = []
    specs = dict(NodeSpec.objects.values_list("pk", "name"))
    for suggestion in prediction.suggestions:
        if suggestion.kind == "nodes":
            words.append(_("%(n)s nodes instead would start now.") % {"n": suggestion.value})
        elif suggestion.kind == "elastic":
            words.append(
                _("Elastic training with at least %(n)s nodes would start now.")
                % {"n": suggestion.value}
            )
        elif suggestion.kind == "spec":
            words.append(
                _("Spec %(spec)s would start now.") % {"spec": specs.get(suggestion.value)}
            )
        elif suggestion.kind == "pool":
            where = names.pool(suggestion.value) if suggestion.value else _("the shared nodes")
            words.append(_("On %(pool)s it would start now.") % {"pool": where})
    return words


def remember(job: Job, draft: QueuedJob, user) -> None:
    """Keep what was predicted at submit, to compare with the actual start later."""
    from dataclasses import replace

    from jobs.models import JobPrediction

    try:
        result = explain(replace(draft, id=job.pk), user, wait=20)
    except NotReady:
        return  # no plan yet in this process: nothing honest to record
    JobPrediction.objects.update_or_create(
        job=job,
        defaults={
            "made_at": timezone.now(),
            "starts_now": result.prediction.starts_now,
            "latest_start": result.latest_start,
            "position": result.prediction.position,
            "queue_length": result.prediction.queue_length,
            "reason": result.text[:500],
        },
    )
