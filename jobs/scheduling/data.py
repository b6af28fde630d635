"""The scheduler's plain data: what a pass is given and what it decides.

Frozen dataclasses only, no ORM: the database layer loads these, calls the core and writes
the decisions back. Times are float seconds on one clock chosen by the caller; resources
use the units of :mod:`resources.placement.capacity` (millicores, MiB, board slots).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from jobs.scheduling.compact import tuple_state
from jobs.scheduling.reasons import Reason

# The scheduler's node is placement's, which /cluster/ asks too (re-exported here).
from resources.placement.answer import SchedNode as SchedNode
from resources.placement.capacity import Demand

NORMAL, URGENT, VERY_URGENT = 0, 1, 2


class Placement(NamedTuple):
    """One replica (one node of a job) on one node: what it holds there."""

    node_id: int
    cpu: int
    memory: int
    slots: tuple[int, ...] = ()


@tuple_state
@dataclass(frozen=True, slots=True)
class Alternative:
    """One node spec a job may run on: ``nodes`` replicas of ``demand``, at least ``min_nodes``.

    ``min_nodes`` is the elastic minimum (SPEC F5); None means "all of them" (not elastic).
    """

    spec_id: int
    demand: Demand
    nodes: int = 1
    min_nodes: int | None = None

    def __post_init__(self) -> None:
        minimum = self.nodes if self.min_nodes is None else self.min_nodes
        if not 1 <= minimum <= self.nodes:
            raise ValueError(f"min_nodes must be in 1..{self.nodes}, not {self.min_nodes}")
        object.__setattr__(self, "min_nodes", minimum)  # always an int from here on


@tuple_state
@dataclass(frozen=True, slots=True)
class QueuedJob:
    """A job waiting in the queue (SPEC J9–J14, J17, Q2).

    ``alternatives``: its specs in the order the user chose them; the first that starts wins
    and the job runs once. ``pool``: the dedicated pool it must run in (it must be in
    ``allowed_pools``, the pools its project may use); None means shared nodes only.
    ``node_names``: when not empty, only those nodes. ``driver``: when set, only nodes with
    that driver version. ``duration``: the most it may run once started (SPEC J21).
    ``project``: whose quotas it counts against (SPEC G1, :mod:`.quotas`). ``claiming``:
    boards are being reclaimed for it (SPEC G2): other projects borrow none meanwhile.
    ``fair``: its team's fair-share standing (SPEC G3, :mod:`.fairness`): within a priority
    class, the lower comes first.
    """

    id: int
    alternatives: tuple[Alternative, ...]
    duration: float
    priority: int = NORMAL
    resubmitted: bool = False
    submitted_at: float = 0.0
    node_names: frozenset[str] = frozenset()
    pool: int | None = None
    driver: int | None = None
    allowed_pools: frozenset[int] = frozenset()
    project: int | None = None
    claiming: bool = False
    fair: float = 0.0

    def __post_init__(self) -> None:
        if not self.alternatives:
            raise ValueError("a job needs at least one node spec")
        if self.duration <= 0:
            raise ValueError("a job's duration must be positive")

    @property
    def queue_key(self) -> tuple[int, bool, float, float, int]:
        """SPEC Q2: priority first, then resubmitted after a fault, then the team's
        fair-share standing (SPEC G3), then submit time."""
        return (-self.priority, not self.resubmitted, self.fair, self.submitted_at, self.id)


@tuple_state
@dataclass(frozen=True, slots=True)
class RunningJob:
    """A job holding resources; it ends at the latest at ``ends_at`` (start + duration)."""

    id: int
    ends_at: float
    holdings: tuple[Placement, ...]


@tuple_state
@dataclass(frozen=True, slots=True)
class Admission:
    """Start this job now on this spec, one placement per replica (all at once: SPEC Q3)."""

    job_id: int
    spec_id: int
    placements: tuple[Placement, ...]


@tuple_state
@dataclass(frozen=True, slots=True)
class Reservation:
    """Where a queued job stands.

    ``start`` is its latest start: if the inventory does not shrink and no job with a better
    queue position arrives, it starts no later (provided the next passes are given this
    reservation back as a commitment). ``start`` equals the pass's ``now`` when it starts now;
    it is None when it cannot start on this inventory, even once every job has ended (the
    reason says whether work with no known end, such as a development environment, is in
    the way or it can never start at all). ``placements`` are the replicas it
    is planned on; ``blockers`` the running or reserved jobs whose end frees them; ``reason``
    why it does not start now (None when it does).
    """

    job_id: int
    position: int  # 1-based, in SPEC Q2 order
    start: float | None
    end: float | None
    spec_id: int | None
    placements: tuple[Placement, ...]
    reason: Reason | None
    blockers: tuple[int, ...] = ()


@tuple_state
@dataclass(frozen=True, slots=True)
class Suggestion:
    """A change to a draft that would let it start now.

    ``kind``: "nodes" (submit ``value`` nodes instead), "elastic" (set the elastic minimum to
    ``value``), "spec" (spec ``value`` instead), "pool" (pool ``value`` instead; None is the
    shared nodes). The form shows only those its rules allow (elastic needs a pool, J17).
    """

    kind: str
    value: int | None


@tuple_state
@dataclass(frozen=True, slots=True)
class Prediction:
    """The answer to "what if I submit this draft now" (SPEC J24, Q5)."""

    starts_now: bool
    spec_id: int | None  # the spec it would start on
    position: int  # k of ``queue_length``, in SPEC Q2 order, the draft included
    queue_length: int
    latest_start: float | None  # None: it can never start on this inventory
    reason: Reason | None
    blockers: tuple[int, ...] = ()
    suggestions: tuple[Suggestion, ...] = ()
