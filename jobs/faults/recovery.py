"""Acting on faults (SPEC F3, F4, F5, Q6): interrupt a running attempt, and when an attempt
ends or a precheck fails, isolate the faulty nodes and put the job back at the head of its
priority class, or end it as error, as its options and counts say (jobs.faults.policy).

Every move goes through jobs.lifecycle (conditional updates): a job another worker moved
first is left alone, so a duplicated task never requeues a job twice.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from console.words import Said, counted, said
from jobs import hooks, lifecycle
from jobs.backend import stop_attempt
from jobs.faults.diagnosis import check_words, diagnose, precheck_found
from jobs.faults.policy import Action, Cause, Decision, Options, decide
from jobs.models import Attempt, FaultRecord, Job, JobEvent, Phase
from jobs.operations import release
from resources.backends.base import WorkloadState, WorkloadStatus
from resources.inventory import faults as node_faults

log = logging.getLogger(__name__)

# The end of a job that recovery took care of (requeued it): the caller closes nothing.
REQUEUED = "requeued"

# The interruptions that are no fault of the job's; any other cause is a fault.
STOP_CAUSES = {Cause.SCALE_UP: Attempt.StopCause.SCALE, Cause.RECLAIM: Attempt.StopCause.RECLAIM}


NOT_FAULTS = (Action.SCALE, Action.RECLAIM)
# Stops that end the job whatever its recovery options: a person's, its duration's, idleness.
ENDING = (Attempt.StopCause.USER, Attempt.StopCause.EXPIRY, Attempt.StopCause.IDLE)


def options(job: Job) -> Options:
    return Options(
        resume=job.resume_enabled,
        max_resumes=job.max_resumes,
        resumes_used=job.resumes_used,
        restart=job.fault_restart_enabled,
        max_restarts=job.max_restarts,
        restarts_used=job.restarts_used,
    )


# --- while it runs -------------------------------------------------------------------------


def interrupt(
    attempt: Attempt,
    cause: Cause,
    check: str,
    nodes: list[str],
    message: Said,
) -> bool:
    """Stop a running attempt for ``cause`` (found by inspection, the performance or hang
    watch, or an elastic job's room to grow): SIGTERM now (a checkpointing job saves), SIGKILL
    after its graceful time; once it has ended, :func:`on_end` requeues or ends the job.
    False when the attempt is already ending (stopped by a person, expired, or interrupted
    by another worker first)."""
    job = attempt.job
    fault = {
        "cause": str(cause),
        "check": check,
        "nodes": nodes,
        "message": str(message),
        "said": message.as_json(),
        "at": timezone.now().isoformat(),
    }
    stop_cause = STOP_CAUSES.get(cause, Attempt.StopCause.FAULT)
    if not Attempt.objects.filter(pk=attempt.pk, ended_at__isnull=True, stop_cause="").update(
        stop_cause=stop_cause, fault=fault
    ):
        return False
    attempt.stop_cause, attempt.fault = stop_cause, fault
    decision = decide(options(job), cause)
    if decision.isolate:
        node_faults.isolate(nodes, _isolation_reason(job, check))
    lifecycle.record(
        job,
        _interruption_words(job, cause, decision, message),
        kind=JobEvent.Kind.INFO if cause == Cause.SCALE_UP else JobEvent.Kind.WARNING,
        item=check,
    )
    seconds = job.graceful_shutdown_seconds
    transaction.on_commit(lambda: stop_attempt(attempt, seconds))
    return True


def what_happens(job: Job, cause: Cause) -> Said:
    """What an interruption for ``cause`` does to ``job`` now (resume, restart or error), in
    words without the finding: the performance and hang alerts tell the owner this."""
    return _interruption_words(job, cause, decide(options(job), cause), "")


def _interruption_words(job: Job, cause: Cause, decision: Decision, message: str) -> Said:
    seconds = job.graceful_shutdown_seconds
    if decision.action == Action.SCALE:
        text = gettext_noop(
            "%(found)s It is stopped (SIGTERM, so it saves a checkpoint; killed after "
            "%(seconds)s s) and resumes on more nodes."
        )
    elif decision.action == Action.RECLAIM and decision.why == "resume":
        text = gettext_noop(
            "%(found)s Its processes get SIGTERM so they save a checkpoint (killed after "
            "%(seconds)s s); then it waits in the queue and continues from its last checkpoint."
        )
    elif decision.action == Action.RECLAIM:
        text = gettext_noop(
            "%(found)s Its processes are stopped (SIGTERM, killed after %(seconds)s s); then it "
            "waits in the queue and starts again from the beginning (it has no checkpoint "
            "resume)."
        )
    elif decision.action == Action.RESUME:
        text = gettext_noop(
            "%(found)s Its processes get SIGTERM so they save a checkpoint (killed after "
            "%(seconds)s s); then it resumes elsewhere (resume %(used)s of %(allowed)s)."
        )
    elif decision.action == Action.RESTART:
        text = gettext_noop(
            "%(found)s Its processes are stopped (SIGTERM, killed after %(seconds)s s); then "
            "it restarts elsewhere (restart %(used)s of %(allowed)s)."
        )
    else:
        text = gettext_noop(
            "%(found)s Its processes are stopped (SIGTERM, killed after %(seconds)s s) and it "
            "ends as error: %(why)s"
        )
    return said(
        text,
        found=message,
        seconds=seconds,
        used=decision.used,
        allowed=decision.allowed,
        why=_why_not(decision),
    )


def _why_not(decision: Decision) -> Said:
    if decision.why == "spent":
        return said(
            counted("its only recovery is used.", "all %(n)s of its recoveries are used.", "n"),
            n=decision.allowed,
        )
    return said(gettext_noop("it has neither checkpoint resume nor fault restart."))


def _isolation_reason(job: Job, check: str) -> Said:
    return said(
        gettext_noop("While running job %(job)s: %(what)s (%(check)s)."),
        what=check_words(check),
        job=job.name,
        check=check,
    )


# --- when it has ended ---------------------------------------------------------------------


def on_end(job: Job, attempt: Attempt, status: WorkloadStatus):
    """What recovery makes of an attempt's end: None (not a fault: the caller ends the job
    as usual), REQUEUED, or the (phase, message, kind) the caller ends the job with."""
    if attempt.stop_cause in ENDING:
        return None
    if attempt.stop_cause == Attempt.StopCause.RECLAIM:  # not a fault: no record of one
        if status.state == WorkloadState.SUCCEEDED:
            return None  # it finished before the signal
        requeue(job, decide(options(job), Cause.RECLAIM))
        return REQUEUED
    if attempt.stop_cause in (Attempt.StopCause.FAULT, Attempt.StopCause.SCALE):
        if status.state == WorkloadState.SUCCEEDED:
            return None  # it finished before the signal: nothing to recover
        fault = attempt.fault or {}
        cause, check, nodes = Cause(fault["cause"]), fault["check"], fault["nodes"]
        found = Said.from_json(fault["said"])
    elif status.state == WorkloadState.FAILED:
        cause, check, nodes, found = diagnose(attempt, status)
        if cause == Cause.CODE and not job.fault_tolerant:
            return None
    else:
        return None
    return _recover(job, attempt, cause, check, nodes, found)


def _recover(job: Job, attempt: Attempt | None, cause, check, nodes, found: Said):
    decision = decide(options(job), cause)
    if cause == Cause.CODE:  # a fault-tolerant job's own code failed on healthy hardware
        message = said(
            gettext_noop(
                "%(found)s Its nodes are healthy, so this is not a fault: it is not restarted."
            ),
            found=found,
        )
        return Phase.ERROR, message, JobEvent.Kind.ERROR
    isolated = node_faults.isolate(nodes, _isolation_reason(job, check)) if decision.isolate else []
    # The record goes with the job's move (the caller's transaction: settle, precheck_failed):
    # a worker killed in between leaves neither, and the next one records the fault once.
    record = FaultRecord.objects.create(
        job=job,
        attempt=attempt,
        at=_fault_time(attempt),
        detected_at=timezone.now(),
        nodes=nodes,
        item=check,
        message=str(found)[:1000],
        said=found.as_json(),
        action=decision.action if decision.action != Action.ERROR else FaultRecord.Action.ERROR,
        isolated=decision.isolate,
        used=decision.used,
        allowed=decision.allowed,
    )
    if isolated:
        log.info("isolated %s for job %s (%s)", isolated, job.pk, check)
    if decision.action == Action.ERROR:
        message = said(gettext_noop("%(found)s Ended as error: %(why)s"),
                       found=found, why=_why_not(decision))  # fmt: skip
        return Phase.ERROR, message, JobEvent.Kind.ERROR
    if not requeue(job, decision):  # moved by someone else first: this recovery did not happen
        record.delete()
    return REQUEUED


def _fault_time(attempt: Attempt | None):
    at = (attempt.fault or {}).get("at") if attempt is not None else None
    if at:
        from django.utils.dateparse import parse_datetime

        return parse_datetime(at)
    return timezone.now()


def _requeue_words(decision: Decision):
    """The phase a requeued job passes through, and what its event says."""
    if decision.action == Action.RESTART:
        via = Phase.RESTARTING
        text = gettext_noop(
            "Restarting after a fault (restart %(used)s of %(allowed)s): back in the queue, "
            "ahead of the jobs of its priority."
        )
    elif decision.action == Action.RESUME:
        via = Phase.RESUMING
        text = gettext_noop(
            "Resuming after a fault (resume %(used)s of %(allowed)s): back in the queue, "
            "ahead of the jobs of its priority; it continues from its last checkpoint."
        )
    elif decision.action == Action.RECLAIM:
        via = Phase.RESUMING if decision.why == "resume" else Phase.RESTARTING
        text = (
            gettext_noop(
                "Its borrowed boards were reclaimed: back in the queue, ahead of the jobs of its "
                "priority once the team they went to has started; it continues from its last "
                "checkpoint."
            )
            if decision.why == "resume"
            else gettext_noop(
                "Its borrowed boards were reclaimed: back in the queue, ahead of the jobs of its "
                "priority once the team they went to has started; it starts again from the "
                "beginning."
            )
        )
    else:
        via = Phase.RESUMING
        text = counted(
            "Growing to %(nodes)s node: back in the queue, ahead of the jobs of its "
            "priority; it continues from its last checkpoint.",
            "Growing to %(nodes)s nodes: back in the queue, ahead of the jobs of its "
            "priority; it continues from its last checkpoint.",
            "nodes",
        )
    return via, text


def requeue(job: Job, decision: Decision) -> bool:
    """Put the job back in the queue, ahead of the rest of its priority class (SPEC Q2),
    at the node count it asked for (an elastic job may get fewer again). Its allocations go
    back; the admission pass starts it again, with prechecks."""
    counts = {}
    if decision.action == Action.RESUME:
        counts["resumes_used"] = decision.used
    elif decision.action == Action.RESTART:
        counts["restarts_used"] = decision.used
    via, text = _requeue_words(decision)
    message = said(text, used=decision.used, allowed=decision.allowed, nodes=job.nodes_asked)
    fields = {
        "resubmitted": True,
        # Q6 counts a fault's resubmission; growing and reclaim are none (they wait as long
        # as they must).
        "resubmitted_at": None if decision.action in NOT_FAULTS else timezone.now(),
        "nodes_granted": None,  # it asks again for what it asked (jobs.admission.db)
        "spec": None,
        **counts,
    }
    with transaction.atomic():
        if job.phase != Phase.ADMITTED:
            if not lifecycle.move(job, via, message, kind=JobEvent.Kind.WARNING):
                return False
            again = said(gettext_noop("In the queue again."))
            moved = lifecycle.move(job, Phase.QUEUED, again, **fields)
        else:  # a precheck failed: nothing of it ever ran
            moved = lifecycle.move(job, Phase.QUEUED, message, kind=JobEvent.Kind.WARNING,
                                   **fields)  # fmt: skip
        if not moved:
            return False
        release(job)
    transaction.on_commit(hooks.queue_changed)
    return True


def precheck_failed(job: Job, failures: list) -> bool:
    """A precheck failed on some of the job's nodes (SPEC F1): its code is not started; the
    nodes are isolated and the job goes back to the queue's head, or ends as error when it
    may not recover. Returns True when the job was requeued."""
    nodes, check, found = precheck_found(failures)
    with transaction.atomic():  # the fault's record with the job's move, or neither
        outcome = _recover(job, None, Cause.PRECHECK, check, nodes, found)
        if outcome == REQUEUED:
            return True
        phase, message, kind = outcome
        if lifecycle.move(job, phase, message, kind=kind, reason=message):
            release(job)
    transaction.on_commit(hooks.queue_changed)
    return False


def counts_left(job: Job) -> tuple[int, int]:
    """(used, allowed) of the recoveries the job has: resumes or restarts."""
    decision = decide(options(job), Cause.CODE)
    return decision.used, decision.allowed
