"""Queue prediction for the job form (SPEC J24) and at submit, from the admission model.

Every answer is from admission's own plan of the queue as it is at that moment (SPEC Q5),
whichever web process gives it: a process keeps its last plan only while one query proves
that nothing the plan depends on has changed since (jobs_queue_change, written by database
triggers), and makes it again otherwise. Answering a draft from a plan costs one search.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime
from typing import NamedTuple

from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from console import heap, limits
from jobs.admission.queued import queued_job
from jobs.admission.state import Seen, epoch, load_consistent, moment, sched_nodes, seen
from jobs.admission.words import Names, say, why_never
from jobs.models import Job, Priority
from jobs.scheduling import core, forecast, never_fits, passes
from jobs.scheduling.data import Alternative, Prediction, QueuedJob, SchedNode
from jobs.scheduling.predict import standing
from resources.models import Node, NodeSpec, ResourcePool
from resources.placement import answer as placement
from resources.placement.availability import demand_of, project_pools
from resources.placement.words import elsewhere_text

DRAFT_ID = -1
# A plan is kept while nothing changes until its next start or end comes (state.Seen),
# but not longer than this: the change log it is checked against keeps 10 minutes.
MAX_AGE_SECONDS = 300.0
# While a running job is past its end (being stopped), the plan has it leave a minute after
# the plan's moment: made again this often then.
OVERDUE_AGE_SECONDS = 30.0
# Up to this many queued jobs the plan is admission's own pass (a few hundred ms at most,
# measured with tests.bench.scheduler_core); beyond, the last pass's plan replayed.
EXACT_QUEUE = 300

_lock = threading.Lock()  # guards _cached
_build_lock = threading.Lock()  # one rebuild at a time per process; the others wait for it
_forecast_lock = threading.Lock()


@dataclass(frozen=True)
class Plan:
    """Admission's plan of the queue, and the database snapshot it was made from."""

    schedule: core.Schedule
    seen: Seen  # the state it was made of, and how long it holds
    built: float  # time.monotonic()
    checked_at: datetime  # when it was last found to still hold
    exact: bool = True  # admission's own pass; else the last pass's plan replayed


_cached: Plan | None = None


def _still_holds(plan: Plan) -> bool:
    """Nothing admission plans from changed since ``plan``'s snapshot (one query)."""
    if time.monotonic() - plan.built > MAX_AGE_SECONDS:
        return False
    return plan.seen.holds(epoch(timezone.now()))


def current_plan() -> Plan:
    """Admission's plan of the queue as it is now (SPEC Q5): the same function admission
    runs, on the same state, checked against the database on every call.

    The plan is kept between calls while nothing it depends on changes (one cheap query
    proves it), so whichever web process answers, it answers from the current state.
    """
    global _cached
    with _lock:
        plan = _cached
    if plan is not None and _still_holds(plan):
        return _checked(plan)
    with _build_lock:
        with _lock:
            plan = _cached
        if plan is not None and _still_holds(plan):  # another thread made it meanwhile
            return _checked(plan)
        # A long queue's plan is about a million objects: kept out of the collector's passes
        # (heap.made_frozen, which collects the whole heap first: for a short queue's plan,
        # a few thousand objects, that costs more than it saves). The last plan tells which.
        long = plan is None or len(plan.schedule.order) > EXACT_QUEUE
        with _lock:
            _cached = plan = None  # the old plan goes before the new one is made
        made = passes.without_gc(_made)
        plan = heap.made_frozen(made) if long else made()
        with _lock:
            _cached = plan
        return plan


def _made() -> Plan:
    state, snapshot, last = load_consistent()
    # Admission's own pass when it is quick; on a long queue, the last pass's plan booked
    # again as it stood, and only the jobs submitted since searched for.
    exact = len(state.queue) <= EXACT_QUEUE
    make = passes.schedule if exact else passes.replay
    schedule = make(state.nodes, state.running, state.queue, state.now, state.committed)
    made_of = seen(state, snapshot, last, schedule.reservations, OVERDUE_AGE_SECONDS)
    return Plan(schedule, made_of, time.monotonic(), timezone.now(), exact)


def _checked(plan: Plan) -> Plan:
    return replace(plan, checked_at=timezone.now())


def current_schedule() -> core.Schedule:
    return current_plan().schedule


def forget_schedule() -> None:
    global _cached
    with _lock:
        _cached = None


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
    (:mod:`resources.placement.answer`)."""
    nodes = whole_inventory()
    reason = never_fits(nodes, draft)
    if reason is None:
        return None
    names = Names()
    wants = [(alternative.demand, alternative.min_nodes) for alternative in draft.alternatives]
    hint = elsewhere_text(placement.elsewhere(nodes, draft, wants), names)
    return Refusal(why_never(reason, names), hint)


def resume_caveat(draft: QueuedJob) -> str | None:
    """Checkpoint resume moves a job to other nodes of its dedicated pool after a fault
    (SPEC F4): when the loss of one of the pool's nodes would leave no room there for the
    job, say so before Create. None when any one node can fail and the job still fits."""
    if draft.pool is None:
        return None
    nodes = whole_inventory()
    for node in nodes:
        if node.pool == draft.pool and never_fits([n for n in nodes if n.id != node.id], draft):
            pool = ResourcePool.objects.filter(pk=draft.pool).values_list("name", flat=True)
            minutes = limits.current().resubmit_queue_timeout_minutes
            return ngettext(
                "If %(node)s fails, pool %(pool)s has no other node with room for this job: "
                "it could not resume there, and would wait until the resubmission timeout "
                "(%(n)s minute) ends it. Choose a pool with more nodes, or fewer nodes.",
                "If %(node)s fails, pool %(pool)s has no other node with room for this job: "
                "it could not resume there, and would wait until the resubmission timeout "
                "(%(n)s minutes) ends it. Choose a pool with more nodes, or fewer nodes.",
                minutes,
            ) % {"node": node.name, "pool": pool.first() or "", "n": minutes}
    return None


@dataclass
class Forecast:
    prediction: Prediction
    text: str
    latest_start: object
    blockers: list[tuple[str, str, object]]  # (name, url or "", ends at)
    suggestions: list[str]
    as_of: datetime  # the moment the queue was found as the answer says
    exact: bool  # from admission's own plan of that moment (else from the last pass's)


def forecast_only(draft: QueuedJob) -> Prediction:
    """The prediction alone (no suggestions, no blockers' names): for the availability
    panel, which asks it of each spec."""
    schedule = current_schedule()
    with _forecast_lock:
        return forecast(schedule, draft)


def explain(draft: QueuedJob, user) -> Forecast:
    plan = current_plan()
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
