"""What a fault means for a job (SPEC F3, F4, F5; seeds 003 and 004): pure rules, no
database, so that every combination is tested.

Seed 004's four scenarios: a failed precheck, a hardware fault found by inspection, or a
hardware fault with the job's code failing, each isolate the faulty nodes and resubmit the
job; the job's code failing on healthy hardware ends it as error. Seed 003 adds the exit codes
an admin names, a lost node and a force-deleted pod. Whether a fault is recovered depends on
the job's options: checkpoint resume (F4) or fault restart (F3), up to their counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Cause(StrEnum):
    PRECHECK = "precheck"  # a check before the start failed: its code never ran
    HARDWARE = "hardware"  # inspection found its node's heartbeat, NIC or boards faulty
    NODE_LOST = "node-lost"  # the cluster lost the node or force-deleted the pod
    EXIT_CODE = "exit-code"  # it exited with one of the admin's fault exit codes
    PROCESS = "process"  # a process of it was killed or frozen by an injected fault
    PERFORMANCE = "performance"  # hardware/e2e crossed its threshold; policy: reschedule
    HANG = "hang"  # no progress for too long; policy: reschedule
    SCALE_UP = "scale-up"  # not a fault: an elastic job grows back to more nodes
    RECLAIM = "reclaim"  # not a fault: its borrowed boards go to another team's guarantee
    CODE = "code"  # its own code failed on healthy hardware (seed 004 scenario 4)


# The causes that say the nodes are to blame: they are isolated (cordoned with the reason)
# so that neither this job nor another starts there until an admin returns them.
ISOLATING = frozenset({Cause.PRECHECK, Cause.HARDWARE, Cause.NODE_LOST, Cause.PERFORMANCE})


class Action(StrEnum):
    RESUME = "resume"  # back to the queue's head; continues from its checkpoint (F4)
    RESTART = "restart"  # back to the queue's head; starts again (F3)
    SCALE = "scale"  # back to the queue's head to start on more nodes (F5)
    # Back to the queue's head once the team it yielded to has started (SPEC G2): it
    # continues from its checkpoint with resume (why="resume"), else starts again.
    RECLAIM = "reclaim"
    ERROR = "error"  # ends as error


@dataclass(frozen=True)
class Options:
    """A job's fault options and what it has used of them."""

    resume: bool = False
    max_resumes: int = 0
    resumes_used: int = 0
    restart: bool = False
    max_restarts: int = 0
    restarts_used: int = 0


@dataclass(frozen=True)
class Decision:
    action: Action
    isolate: bool  # isolate the nodes the fault was found on
    used: int  # resumes or restarts used once this is done
    allowed: int  # the job's maximum of them (0: it has none)
    # for ERROR: "off" (no recovery asked), "spent" (count used up), "code"; for RECLAIM:
    # "resume" or "restart"
    why: str = ""


def decide(options: Options, cause: Cause) -> Decision:
    if cause == Cause.CODE:
        return Decision(Action.ERROR, False, *_counts(options), why="code")
    if cause == Cause.SCALE_UP:
        return Decision(Action.SCALE, False, options.resumes_used, options.max_resumes)
    if cause == Cause.RECLAIM:  # not counted: no fault of the job's
        how = "resume" if options.resume else "restart"
        return Decision(Action.RECLAIM, False, *_counts(options), why=how)
    isolate = cause in ISOLATING
    if options.resume:
        if options.resumes_used < options.max_resumes:
            return Decision(Action.RESUME, isolate, options.resumes_used + 1, options.max_resumes)
        return Decision(
            Action.ERROR, isolate, options.resumes_used, options.max_resumes, why="spent"
        )
    if options.restart:
        if options.restarts_used < options.max_restarts:
            return Decision(
                Action.RESTART, isolate, options.restarts_used + 1, options.max_restarts
            )
        return Decision(
            Action.ERROR, isolate, options.restarts_used, options.max_restarts, why="spent"
        )
    return Decision(Action.ERROR, isolate, 0, 0, why="off")


def _counts(options: Options) -> tuple[int, int]:
    if options.resume:
        return options.resumes_used, options.max_resumes
    if options.restart:
        return options.restarts_used, options.max_restarts
    return 0, 0


def classify(
    *,
    exit_code: int | None,
    fault_codes: frozenset[int] | set[int],
    node_lost: bool = False,
    hardware: bool = False,
    process: bool = False,
) -> Cause:
    """Why a failed attempt failed, most telling first: faulty hardware on its nodes, a lost
    node or pod, an injected process fault, a fault exit code; else its own code."""
    if hardware:
        return Cause.HARDWARE
    if node_lost:
        return Cause.NODE_LOST
    if process:
        return Cause.PROCESS
    if exit_code is not None and exit_code in fault_codes:
        return Cause.EXIT_CODE
    return Cause.CODE
