"""Quotas (SPEC G1): the rules that keep the department -> project tree whole, and where
each holder stands now.

A quota's *scope* is an accelerator model, on every node or in one dedicated pool. A parent
(department) quota covers a child's (one of its projects') when the model is the same and
the parent's is on every node or in the child's pool. Two rules keep the tree whole:

* the guarantees of the children a parent quota covers add up to no more than its own
  (a guarantee is a promise, and the department cannot promise what it was not given);
* no child's maximum is above the parent's (a child without one has the parent's).

Plain data in, answers out: the forms ask :func:`misfits` before saving, the pages ask
:func:`standing` what to draw.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

ZERO = Decimal(0)


@dataclass(frozen=True, slots=True)
class Scope:
    """An accelerator model's boards, in one pool or (pool None) on every node."""

    model: int
    pool: int | None = None

    def covers(self, other: Scope) -> bool:
        return self.model == other.model and self.pool in (None, other.pool)


@dataclass(frozen=True, slots=True)
class Limit:
    """One quota: who holds it (a name for the messages), its scope and amounts."""

    holder: str
    scope: Scope
    guaranteed: Decimal
    maximum: Decimal | None = None

    def __post_init__(self) -> None:
        if self.guaranteed < 0:
            raise ValueError("a guarantee is never negative")
        if self.maximum is not None and self.maximum < self.guaranteed:
            raise ValueError("a maximum is never below the guarantee")


@dataclass(frozen=True, slots=True)
class Misfit:
    """A parent quota the children break: ``field`` is "guaranteed" (``total``: what the
    children it covers are guaranteed together) or "maximum" (``child``'s maximum is above
    the parent's; ``total`` is that maximum)."""

    field: str
    parent: Limit
    total: Decimal
    child: Limit | None = None


def misfits(parents: Iterable[Limit], children: Iterable[Limit]) -> list[Misfit]:
    """Every way ``children`` (a department's projects' quotas) break ``parents`` (the
    department's), parents in the order given."""
    children = list(children)
    found = []
    for parent in parents:
        covered = [child for child in children if parent.scope.covers(child.scope)]
        total = sum((child.guaranteed for child in covered), ZERO)
        if total > parent.guaranteed:
            found.append(Misfit("guaranteed", parent, total))
        if parent.maximum is not None:
            for child in covered:
                if child.maximum is not None and child.maximum > parent.maximum:
                    found.append(Misfit("maximum", parent, child.maximum, child))
    return found


@dataclass(frozen=True, slots=True)
class Held:
    """Boards one project holds (or waits for) on one model in one pool (None: shared)."""

    project: int
    model: int
    pool: int | None
    boards: Decimal


@dataclass(frozen=True, slots=True)
class Standing:
    """Where one quota stands now: boards ``used`` by running work within its scope (the
    department's: all its projects'), ``waiting`` for queued jobs of its holder."""

    guaranteed: Decimal
    maximum: Decimal | None
    used: Decimal
    waiting: Decimal

    @property
    def borrowed(self) -> Decimal:
        """Held beyond the guarantee: idle capacity of others, which may be taken back."""
        return max(ZERO, self.used - self.guaranteed)

    @property
    def within(self) -> Decimal:
        return min(self.used, self.guaranteed)

    @property
    def room(self) -> Decimal | None:
        """What it may still take before its maximum (None: no maximum)."""
        return None if self.maximum is None else max(ZERO, self.maximum - self.used)


def standing(
    scope: Scope, guaranteed: Decimal, maximum: Decimal | None, projects: Iterable[int],
    held: Iterable[Held], waiting: Iterable[Held],
) -> Standing:  # fmt: skip
    """A quota of ``projects`` (one for a project, its projects for a department)."""
    projects = set(projects)

    def within(rows: Iterable[Held]) -> Decimal:
        return sum(
            (
                row.boards
                for row in rows
                if row.project in projects and scope.covers(Scope(row.model, row.pool))
            ),
            ZERO,
        )

    return Standing(guaranteed, maximum, within(held), within(waiting))
