"""Queue prediction for the job form (SPEC J24) and at submit, from the admission model.

Every answer is from admission's own plan of the queue as it is at that moment (SPEC Q5),
whichever web process gives it. The admission pass publishes the plan it made
(:mod:`jobs.admission.plans`); a process keeps a plan only while one query proves that
nothing it depends on has changed since (jobs_queue_change, written by database triggers),
and otherwise takes the newest published one when that one holds. A short queue's plan is
made on the spot when neither holds; a long queue's would cost seconds, so until the pass
that every change asks for publishes the next one, the last plan answers, dated. Answering a
draft from a plan costs one search.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime

from django.db import connection
from django.db.models import Exists, OuterRef
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from console import heap
from jobs.admission import plans
from jobs.admission.caps import borrowed_if_started
from jobs.admission.plans import Plan
from jobs.admission.queued import queued_job
from jobs.admission.state import epoch, load_consistent, moment, seen
from jobs.admission.words import Names, borrowed_text, say
from jobs.models import Job, Priority
from jobs.scheduling import core, forecast, passes
from jobs.scheduling.data import Alternative, Prediction, QueuedJob
from jobs.scheduling.predict import standing
from resources.models import NodeSpec
from resources.placement.availability import demand_of, project_pools

DRAFT_ID = -1
# Up to this many queued jobs the plan is made on the spot when none published holds (a
# few hundred ms at most, measured with tests.bench.scheduler_core), as admission's own
# pass; beyond, the last plan answers while the next pass makes the next one.
EXACT_QUEUE = 300
# How long a long queue's last plan answers while no pass publishes a newer one (the worker
# is down or far behind): then it is made here again, from the last pass's reservations.
STALE_SECONDS = 60.0

_lock = threading.Lock()  # guards _cached
_build_lock = threading.Lock()  # one rebuild at a time per process; the others wait for it
_forecast_lock = threading.Lock()

_cached: Plan | None = None
# Whether this process's last plan was a long queue's, kept when the plan is dropped: the
# next one is most likely the same size. A process that has made none assumes long (its
# first plan pays one full collection, heap.made_frozen); one whose plans are short never
# pays it again, which on a large heap costs a tenth of a second or more.
_last_long = True


def _still_holds(plan: Plan) -> bool:
    if plan.age() > plans.MAX_AGE_SECONDS:
        return False
    return plan.seen.holds(epoch(timezone.now()))


def _long(plan: Plan | None) -> bool:
    return plan is not None and len(plan.schedule.order) > EXACT_QUEUE


def _answers_meanwhile(plan: Plan | None) -> bool:
    """A long queue's last plan answers while the next pass is under way."""
    return _long(plan) and plan.age() < STALE_SECONDS


def current_plan() -> Plan:
    """Admission's plan of the queue as it is now (SPEC Q5), checked against the database
    on every call: this process's, else the newest the admission pass published, else
    (a short queue, or no pass for a while) made here.

    On a long queue changed since this process's plan, that plan answers, dated by its
    ``checked_at``, while a thread of the process takes the plan the next pass publishes
    (unpickling a long queue's plan costs about a second: no request waits for it).
    """
    with _lock:
        plan = _cached
    if plan is not None and _still_holds(plan):
        return _checked(plan)
    if _answers_meanwhile(plan):
        _refresh_soon()
        return replace(plan, holds=False)
    with _build_lock:
        with _lock:
            plan = _cached
        if plan is not None and _still_holds(plan):  # another thread made it meanwhile
            return _checked(plan)
        long = _last_long if plan is None else _long(plan)
        token = plans.published_token()
        if token and token != (plan.token if plan else ""):
            # The old plan goes before the next one is loaded: two would double the memory.
            plan = None
            _drop()
            plan = _kept(plans.load, long)
            if plan is not None and _still_holds(plan):
                return _checked(plan)
        if _answers_meanwhile(plan):
            return replace(plan, holds=False)
        plan = None
        _drop()
        return _kept(_made, long)


# The published plan is looked for at most this often while a long queue's last plan answers.
LOOK_SECONDS = 1.0
_refresher: threading.Thread | None = None
_looked = 0.0  # time.monotonic() of the last look


def _refresh_soon() -> None:
    """Take the newest published plan in a thread of its own, if one is not already
    doing so and the last look was not a moment ago."""
    global _refresher, _looked
    with _lock:
        now = time.monotonic()
        if (_refresher is not None and _refresher.is_alive()) or now - _looked < LOOK_SECONDS:
            return
        _looked = now
        _refresher = threading.Thread(target=_refresh, name="queue-plan", daemon=True)
        _refresher.start()


def _refresh() -> None:
    try:
        with _build_lock:
            with _lock:
                plan = _cached
            token = plans.published_token()
            if plan is None or not token or token == plan.token:
                return  # nothing newer: the pass a change asks for has not published yet
            # Made beside the old plan, which answers meanwhile: both for a moment.
            made = heap.made_frozen_beside(passes.without_gc(lambda: _newer(plans.load(), plan)))
            if made is not None:
                _keep(made)
    finally:
        connection.close()  # this thread's own connection (the plan's check)


def _newer(loaded: Plan | None, than: Plan) -> Plan | None:
    return loaded if loaded is not None and loaded.seen.now >= than.seen.now else None


def settle() -> None:
    """Wait until a plan being taken in the background is taken (tests, shutdown)."""
    refresher = _refresher
    if refresher is not None:
        refresher.join()


def _drop() -> None:
    global _cached
    with _lock:
        _cached = None


def _kept(make, long: bool) -> Plan | None:
    """``make()`` a plan and keep it as this process's (unless None).

    A long queue's plan is about a million objects: kept out of the collector's passes
    (heap.made_frozen, which collects the whole heap first: for a short queue's plan, a few
    thousand objects, that costs more than it saves). The last plan tells which."""
    made = passes.without_gc(make)
    plan = heap.made_frozen(made) if long else made()
    if plan is not None:
        _keep(plan)
    return plan


def _keep(plan: Plan) -> None:
    global _cached, _last_long
    with _lock:
        _cached = plan
        _last_long = _long(plan)


def _made() -> Plan:
    state, snapshot, last = load_consistent()
    # Admission's own pass when it is quick; on a long queue, the last pass's plan booked
    # again as it stood, and only the jobs submitted since searched for.
    exact = len(state.queue) <= EXACT_QUEUE
    make = passes.schedule if exact else passes.replay
    schedule = state.plan(make)
    made_of = seen(state, snapshot, last, schedule.reservations, plans.OVERDUE_SECONDS)
    return Plan(
        schedule, made_of, made=state.now, checked_at=timezone.now(), exact=exact, holds=True
    )


def _checked(plan: Plan) -> Plan:
    """The plan, found to hold now: kept so (a long queue's last plan answers as of then)."""
    global _cached
    checked = replace(plan, checked_at=timezone.now(), holds=True)
    with _lock:
        if _cached is plan:
            _cached = checked
    return checked


def current_schedule() -> core.Schedule:
    return current_plan().schedule


def forget_schedule() -> None:
    settle()
    _drop()


def draft_from(data: dict, project, *, job_id: int = DRAFT_ID) -> QueuedJob | None:
    """A QueuedJob for the form's (partly) cleaned data; None while no spec is chosen."""
    return queued_job(
        id=job_id,
        specs=data.get("specs") or (),
        nodes_asked=data.get("node_count"),
        elastic_min=data.get("elastic_min_nodes") if data.get("elastic") else None,
        duration_hours=data.get("duration_hours") or 24,
        submitted_at=epoch(timezone.now()),
        priority=data.get("priority") or Priority.NORMAL,
        node_names=(node.name for node in data.get("node_names") or ()),
        pool=getattr(data.get("pool"), "pk", None),
        driver=getattr(data.get("driver_version"), "pk", None),
        allowed_pools=project_pools(project),
        project=getattr(project, "pk", None),
    )


@dataclass
class Forecast:
    prediction: Prediction
    text: str
    latest_start: object
    blockers: list[tuple[str, str, object]]  # (name, url or "", ends at)
    suggestions: list[str]
    as_of: datetime  # the moment the queue was found as the answer says
    exact: bool  # from admission's own plan of that moment (else from the last pass's)
    borrowed: str = ""  # starting now, it would run on borrowed boards (SPEC G2)


def forecast_only(draft: QueuedJob) -> Prediction:
    """The prediction alone (no suggestions, no blockers' names): for the availability
    panel, which asks it of each spec."""
    schedule = current_schedule()
    with _forecast_lock:
        return forecast(schedule, draft)


def explain(draft: QueuedJob, user, plan: Plan | None = None) -> Forecast:
    """The forecast of the draft in words, from ``plan`` (else the current plan)."""
    plan = plan or current_plan()
    schedule = plan.schedule
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
        # A job just submitted is in the plan already: its own reservation is the answer.
        prediction = standing(schedule, draft.id) or forecast(schedule, draft, others)
    names = Names()
    text = say(prediction.reason, names) if prediction.reason else ""
    return Forecast(
        prediction=prediction,
        text=text,
        latest_start=moment(prediction.latest_start),
        blockers=describe_blockers(prediction.blockers, user),
        suggestions=_suggestions(prediction, names),
        as_of=plan.checked_at,
        exact=plan.exact,
        borrowed=_borrowed(schedule, draft, prediction, names),
    )


def _borrowed(schedule: core.Schedule, draft: QueuedJob, prediction: Prediction, names) -> str:
    """What the form says of a draft that would start now beyond its project's guarantee."""
    if not prediction.starts_now:
        return ""
    lent = borrowed_if_started(schedule, draft, prediction.spec_id)
    return borrowed_text(lent, names) if lent is not None else ""


def describe_blockers(ids, user) -> list[tuple[str, str, object]]:
    """(name, link, ends by) of the jobs whose end frees a reservation; jobs the user may
    not see are named by their project only."""
    if not ids:
        return []
    visible = Job.objects.visible_to(user).filter(pk=OuterRef("pk"))
    rows = (
        Job.objects.filter(pk__in=ids)
        .annotate(visible=Exists(visible))
        .values_list("pk", "name", "project__name", "deadline", "visible")
    )  # one query, whatever the user may see
    found = []
    for pk, name, project, deadline, may_see in rows:
        if may_see:
            found.append((name, f"/jobs/{pk}/", deadline))
        else:
            found.append((_("a job of project %(p)s") % {"p": project}, "", deadline))
    return found


def _suggestions(prediction: Prediction, names: Names) -> list[str]:
    words = []
    specs = {}
    if any(suggestion.kind == "spec" for suggestion in prediction.suggestions):
        specs = dict(NodeSpec.objects.values_list("pk", "name"))
    for suggestion in prediction.suggestions:
        if suggestion.kind == "nodes":
            words.append(
                ngettext(
                    "%(n)s node instead would start now.",
                    "%(n)s nodes instead would start now.",
                    suggestion.value,
                )
                % {"n": suggestion.value}
            )
        elif suggestion.kind == "elastic":
            words.append(
                ngettext(
                    "Elastic training with at least %(n)s node would start now.",
                    "Elastic training with at least %(n)s nodes would start now.",
                    suggestion.value,
                )
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
    from jobs.models import JobPrediction

    result = explain(replace(draft, id=job.pk), user)
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
