"""Quota maximums at admission (SPEC G1): which queued jobs a pass may plan, and which wait
for their team's maximum.

Pure: plain data in, decisions out. A *cap* is a maximum of boards of one accelerator model
(on every node, or in one pool) shared by some projects (a project's own, or a department's
over its projects). Boards are counted in eighths, the smallest slice of a board.

The rule, in queue order: a job joins the pass when, for every cap over it, what the cap's
projects hold now, plus what jobs already let in this pass ask, plus what it asks, stays
within the maximum; otherwise it is *held*, and so is every later job under the cap that
held it (first come, first served within a team: small jobs never starve a large one; a
department's other projects go on within the department's room). A job with several specs
is let in on those that fit; an elastic one on as many nodes as fit, down to its minimum.
A job asking more than a maximum on every spec can never start: it is held, and holds
nobody back (the form refuses it). A job let in counts, under a cap, the most boards of
any of its specs the cap covers (it runs on one of them, unknown yet): so whatever the
pass then admits, no cap is ever exceeded. A held job gets no reservation and blocks
nothing: other teams' jobs plan past it. A job promised a start on one spec gains no other
that would hold back a job behind it with a promise of its own (see :func:`gate`).

Borrowing yields to a claim (SPEC G2): while a job of another project waits within its own
guarantee (it is *claiming*, and the pass reclaims boards for it, jobs.admission.reclaim),
a project's own cap on that accelerator model and pool holds it to its guarantee instead of
its maximum, so that no job starts on borrowed boards the claim is waiting for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from jobs.scheduling.compact import tuple_state
from jobs.scheduling.data import Alternative, QueuedJob, Reservation
from jobs.scheduling.reasons import HeldForQuota

EIGHTHS = 8
NO_MAXIMUM = 1 << 62  # a quota without a maximum: it holds no job back


@tuple_state
@dataclass(frozen=True, slots=True)
class Cap:
    """A quota of boards of ``model`` (in ``pool``; None: on every node) over ``projects``:
    at most ``maximum`` eighths (NO_MAXIMUM: none), ``guaranteed`` of them promised;
    ``holder`` names it for the reasons."""

    id: int
    holder: str
    projects: frozenset[int]
    model: int
    pool: int | None
    maximum: int
    guaranteed: int = 0

    def covers(self, project: int | None, alternative: Alternative, pool: int | None) -> bool:
        return (
            project in self.projects
            and alternative.demand.model == self.model
            and self.pool in (None, pool)
        )


def per_node(alternative: Alternative) -> int:
    """Eighths of a board one node of the job holds on this spec."""
    demand = alternative.demand
    if demand.boards:
        return demand.boards * EIGHTHS
    return EIGHTHS // demand.slice_divisor if demand.wants_boards else 0


def eighths(alternative: Alternative) -> int:
    """Eighths of a board the job holds on this spec, all its nodes together."""
    return per_node(alternative) * alternative.nodes


def asks(job: QueuedJob, cap: Cap) -> int:
    """What the job asks under ``cap``: the most of any of its specs the cap covers."""
    return max(
        (eighths(a) for a in job.alternatives if cap.covers(job.project, a, job.pool)), default=0
    )


@dataclass
class Gate:
    """A pass's split of the queue: the jobs it plans (in queue order), those held with
    why, and each cap as the pass left it (what it holds and is asked, whether a job was
    held on it), which a draft is gated against."""

    plannable: list[QueuedJob] = field(default_factory=list)
    held: dict[int, HeldForQuota] = field(default_factory=dict)
    caps: list[Cap] = field(default_factory=list)
    taken: dict[int, int] = field(default_factory=dict)
    closed: set[int] = field(default_factory=set)
    used: dict[int, int] = field(default_factory=dict)  # held when the pass began
    held_on: dict[int, int] = field(default_factory=dict)  # held job -> the cap that held it
    # The caps over each project: a job looks at its own only (a queue of thousands).
    by_project: dict[int | None, list[Cap]] = field(default_factory=dict)
    # (model, pool) -> {project: holder} of the claims waiting there within a guarantee.
    claims: dict[tuple[int, int | None], dict[int, str]] = field(default_factory=dict)
    # Whether some node could ever hold the job on a spec; None: any may.
    placeable: Callable[[QueuedJob, Alternative], bool] | None = None

    def __post_init__(self) -> None:
        for cap in self.caps:
            for project in cap.projects:
                self.by_project.setdefault(project, []).append(cap)

    def claim(self, job: QueuedJob) -> None:
        """Count ``job`` (marked claiming) as a claim where it fits its own project's
        guarantee as things stand."""
        for cap in self.over(job):
            if len(cap.projects) == 1 and any(
                cap.covers(job.project, a, job.pool)
                and self.used.get(cap.id, 0) + per_node(a) * a.min_nodes <= cap.guaranteed
                for a in job.alternatives
            ):
                self.claims.setdefault((cap.model, job.pool), {})[job.project] = cap.holder

    def yields_to(self, job: QueuedJob, cap: Cap) -> str | None:
        """The holder of another project's claim that holds ``job`` to ``cap``'s guarantee
        (its own project's cap only); None when none does."""
        if len(cap.projects) != 1:
            return None
        claims = self.claims.get((cap.model, job.pool), {})
        return next((holder for project, holder in claims.items() if project != job.project),
                    None)  # fmt: skip

    def limit(self, job: QueuedJob, cap: Cap) -> int:
        """The most ``cap`` lets its projects hold for ``job``: its maximum, or its
        guarantee while another project's claim waits there."""
        return cap.guaranteed if self.yields_to(job, cap) is not None else cap.maximum

    def over(self, job: QueuedJob) -> list[Cap]:
        return self.by_project.get(job.project, [])

    def holds(self, job: QueuedJob) -> HeldForQuota | None:
        """Why ``job`` would be held if it came after every job of the pass (a draft); None
        if it would be planned."""
        return None if self.fitted(job) else self._why(job)[1]

    def _fits(self, job: QueuedJob, alternative: Alternative) -> int:
        """How many of the spec's nodes fit its caps now: all when none covers it, none
        under a cap a job ahead was held on."""
        each = per_node(alternative)
        fit = alternative.nodes
        for cap in self.over(job):
            if each and cap.covers(job.project, alternative, job.pool):
                if cap.id in self.closed:
                    return 0
                fit = min(fit, (self.limit(job, cap) - self.taken[cap.id]) // each)
        return max(fit, 0)

    def never(self, job: QueuedJob) -> bool:
        """No node could ever hold the job on any of its specs: it passes the gate taking
        nothing of any cap, and the plan says why it can never start. Counted, it held its
        team's later jobs back for boards it would never use."""
        return not self._possible(job)

    def fitted(self, job: QueuedJob) -> QueuedJob | None:
        """The job on the specs that fit its caps now, an elastic one on as many nodes as
        they have room for (at least its minimum); None when no spec fits. A job no node
        could ever hold passes as it is (see :meth:`never`)."""
        return self._fitted(job)[0]

    def _fitted(self, job: QueuedJob) -> tuple[QueuedJob | None, bool]:
        """:meth:`fitted`, and :meth:`never` (one look at where the specs could go)."""
        possible = self._possible(job)
        if not possible:
            return job, True
        alternatives = []
        for alternative in possible:
            fit = self._fits(job, alternative)
            if fit >= alternative.min_nodes:
                alternatives.append(replace(alternative, nodes=min(fit, alternative.nodes)))
        if not alternatives:
            return None, False
        if tuple(alternatives) == job.alternatives:
            return job, False
        return replace(job, alternatives=tuple(alternatives)), False

    def _possible(self, job: QueuedJob) -> list[Alternative]:
        """The job's specs some node could ever hold. A spec none could is no way in: let
        in on it alone (its other specs over a cap), the job said it could never start, and
        once its team had room again it came ahead of promises made meanwhile as if it had
        been planned all along."""
        placeable = self.placeable
        if placeable is None:
            return list(job.alternatives)
        return [a for a in job.alternatives if placeable(job, a)]

    def _why(self, job: QueuedJob) -> tuple[Cap | None, HeldForQuota]:
        """The cap that holds a job no spec of which fits, and why. The cap is None when
        every spec asks more than some maximum at its smallest: the job could never start,
        and holds nobody else back."""
        blocking = []
        for alternative in self._possible(job):
            n = per_node(alternative) * alternative.min_nodes
            for cap in self.over(job):
                if n and cap.covers(job.project, alternative, job.pool):
                    ever = n <= cap.maximum
                    limit = self.limit(job, cap)
                    now = ever and cap.id not in self.closed and self.taken[cap.id] + n <= limit
                    if not now:
                        blocking.append((ever, cap, n))
                        break
        ever = [(cap, n) for possible, cap, n in blocking if possible]
        if ever:
            cap, n = ever[0]
            return cap, self._reason(job, cap, n, behind=cap.id in self.closed)
        _possible, cap, n = blocking[0]
        return None, self._reason(job, cap, n)

    def _reason(self, job: QueuedJob, cap: Cap, n: int, *, behind: bool = False) -> HeldForQuota:
        taken = self.taken[cap.id]
        yields = "" if behind else (self.yields_to(job, cap) or "")
        return HeldForQuota(cap.holder, cap.model, cap.pool, cap.maximum, taken, n, behind,
                            guaranteed=cap.guaranteed, yields_to=yields)  # fmt: skip

    def admit(self, job: QueuedJob) -> bool:
        """Let ``job`` in on the specs (and, elastic, the nodes) that fit its caps, counting
        what it then asks; else hold it, closing the cap that holds it."""
        fitted, never = self._fitted(job)
        if fitted is not None:
            if not never:
                for cap in self.over(fitted):
                    self.taken[cap.id] += asks(fitted, cap)
            self.plannable.append(fitted)
            return True
        cap, self.held[job.id] = self._why(job)
        # Only the cap that held it closes: a department's other projects go on within it.
        if cap is not None:
            self.closed.add(cap.id)
            self.held_on[job.id] = cap.id
        return False


def gate(
    queue: Iterable[QueuedJob],
    caps: Iterable[Cap],
    used: Mapping[int, int],
    placeable: Callable[[QueuedJob, Alternative], bool] | None = None,
    committed: Mapping[int, Reservation] | None = None,
) -> Gate:
    """Split ``queue`` (in queue order) into the jobs a pass plans and those held, with why.
    ``used``: eighths each cap's projects hold now (by cap id). ``placeable``: whether some
    node could ever hold a job on a spec (a job none could takes nothing of its caps).
    ``committed``: the last pass's reservations, the promised ones with a start.

    A job gains no spec that would hold back a job behind it with a promise: let in on its
    one spec under a cap that was full, it was promised a start on another spec, and jobs
    behind it under that cap were let in and promised theirs; once the cap has room again,
    counted at its largest spec there, it would hold them back, and their promises would be
    broken. Where a promised job would be held, the promised jobs ahead of it under the cap
    that holds it are let in on the spec they were promised, and the queue gated again."""
    caps, queue = list(caps), list(queue)
    result = _split(queue, caps, used, placeable)
    kept = _to_promises(queue, result, committed or {})
    return result if kept is None else _split(kept, caps, used, placeable)


def _split(queue: list[QueuedJob], caps: list[Cap], used: Mapping[int, int],
           placeable: Callable[[QueuedJob, Alternative], bool] | None) -> Gate:  # fmt: skip
    held = {cap.id: used.get(cap.id, 0) for cap in caps}
    result = Gate(caps=caps, taken=dict(held), used=held, placeable=placeable)
    if not caps:
        result.plannable = list(queue)
        return result
    for job in queue:
        if job.claiming:
            result.claim(job)
    for job in queue:
        result.admit(job)
    return result


def _to_promises(queue: list[QueuedJob], split: Gate,
                 committed: Mapping[int, Reservation]) -> list[QueuedJob] | None:  # fmt: skip
    """``queue`` with the promised jobs ahead of a held promised job, under the cap that
    held it, let in on their promised spec alone where that asks less of the cap; None
    when no job would change."""
    last: dict[int, int] = {}  # cap id -> the position of the last promised job it held
    for position, job in enumerate(queue):
        cap = split.held_on.get(job.id)
        if cap is not None and _promised(committed, job.id) is not None:
            last[cap] = position
    if not last:
        return None
    kept, changed = list(queue), False
    for position, job in enumerate(queue):
        spec = _promised(committed, job.id)
        if spec is None or len(job.alternatives) < 2:
            continue
        alternative = next((a for a in job.alternatives if a.spec_id == spec), None)
        narrowed = None if alternative is None else replace(job, alternatives=(alternative,))
        if narrowed is not None and any(
            position < last.get(cap.id, -1) and asks(narrowed, cap) < asks(job, cap)
            for cap in split.over(job)
        ):
            kept[position], changed = narrowed, True
    return kept if changed else None


def _promised(committed: Mapping[int, Reservation], job_id: int) -> int | None:
    """The spec the job was promised a start on (None: no promise)."""
    kept = committed.get(job_id)
    return None if kept is None or kept.start is None else kept.spec_id


@dataclass(frozen=True, slots=True)
class Borrowed:
    """An admission beyond a guarantee (SPEC G2): with it, ``holder``'s jobs hold ``holds``
    eighths of ``model`` boards (in ``pool``), more than the ``guaranteed``."""

    holder: str
    model: int
    pool: int | None
    guaranteed: int
    holds: int


def borrowing(
    admissions: Iterable[tuple[QueuedJob, Alternative, int]],
    caps: Iterable[Cap],
    used: Mapping[int, int],
) -> dict[int, Borrowed]:
    """Which of ``admissions`` (job, the spec it starts on, its node count), taken in order,
    run beyond a project's guarantee: the boards its project holds, with those admitted
    before it and its own, are more than guaranteed. Departments' guarantees are shared
    out among their projects, so only a project's own counts here."""
    own = [cap for cap in caps if len(cap.projects) == 1]
    holds = {cap.id: used.get(cap.id, 0) for cap in own}
    found: dict[int, Borrowed] = {}
    for job, alternative, nodes in admissions:
        boards = per_node(alternative) * nodes
        for cap in own:
            if boards and cap.covers(job.project, alternative, job.pool):
                holds[cap.id] += boards
                if holds[cap.id] > cap.guaranteed and job.id not in found:
                    found[job.id] = Borrowed(
                        cap.holder, cap.model, cap.pool, cap.guaranteed, holds[cap.id]
                    )
    return found


def borrows(gate: Gate, admitted: Iterable[tuple[QueuedJob, Alternative, int]], draft: QueuedJob,
            spec: Alternative) -> Borrowed | None:  # fmt: skip
    """Whether ``draft``, starting now on ``spec`` after the pass's ``admitted``, would run
    on borrowed boards (the form says so before Create)."""
    starts = [*admitted, (draft, spec, spec.nodes)]
    return borrowing(starts, gate.caps, gate.used).get(draft.id)
