"""Why a job waits, or can never start: small dataclasses the pages turn into words.

The web layer translates reasons itself; :func:`words` gives plain English for tests, logs
and the command line.
"""

from __future__ import annotations

from dataclasses import dataclass

# Why a spec cannot start is the placement rules' answer, shared with /cluster/.
from resources.placement.answer import NeverFits, NoAllowedNode, Shortfall, TooFewNodes


@dataclass(frozen=True, slots=True)
class HeldForQueue:
    """It fits on free resources now, but starting it would delay jobs ahead of it."""


@dataclass(frozen=True, slots=True)
class HeldForQuota:
    """It waits for its team's maximum (SPEC G1, :mod:`.quotas`): ``holder``'s cap on
    ``model`` boards (in ``pool``; None: on every node) has ``taken`` of its ``maximum``
    held now or asked by jobs ahead of it, and this job asks ``asks`` more. In eighths of
    a board. ``behind``: a job ahead of it under the same maximum waits for it first
    (first come, first served within a team), whatever room there is. ``yields_to``: the
    holder of another project's claim within its guarantee, which holds this team to its
    ``guaranteed`` boards meanwhile (SPEC G2: borrowing yields to a guarantee)."""

    holder: str
    model: int
    pool: int | None
    maximum: int
    taken: int
    asks: int
    behind: bool = False
    guaranteed: int = 0
    yields_to: str = ""

    @property
    def never(self) -> bool:
        """It asks more than the maximum: it could never start under it."""
        return self.asks > self.maximum


@dataclass(frozen=True, slots=True)
class NotYetPlanned:
    """A long queue planned afresh is planned a part a pass (``core.FRESH`` jobs, in queue
    order): this job, or one ahead of it, is not reached yet. It gets a start within a few
    passes; it holds no promise until then, and starts no earlier than that."""


Reason = (
    Shortfall
    | TooFewNodes
    | NoAllowedNode
    | HeldForQueue
    | HeldForQuota
    | NotYetPlanned
    | NeverFits
)


def _amount(resource: str, value: int) -> str:
    if resource == "cpu":
        return f"{value / 1000:g} CPUs"
    if resource == "memory":
        return f"{value / 1024:g} GiB of memory"
    return f"{value} boards"


def _shortfall(reason: Shortfall, never: bool) -> str:
    where = f" ({reason.node_name})" if reason.node_name else ""
    free = "the most any allowed node has" if never else "the most free on any allowed node is"
    if reason.resource == "boards" and reason.slices > 1:
        what = f"a 1/{reason.slices} slice of a model {reason.model} board"
        return f"needs {what}; no allowed node has one {'at all' if never else 'free'}"
    if reason.resource == "boards":
        need = f"{reason.need} boards of model {reason.model} on one node"
        return f"needs {need}; {free} {reason.best_free}{where}"
    need = _amount(reason.resource, reason.need)
    best = _amount(reason.resource, reason.best_free)
    return f"needs {need} on one node; {free} {best}{where}"


_RULES = {
    "pool-not-allowed": "its project may not use pool {value}",
    "empty-pool": "pool {value} has no schedulable node",
    "unknown-names": "no node is named {value}",
    "names-elsewhere": "the nodes it is pinned to are not in its pool",
    "driver": "no allowed node has driver version {value}",
    "model": "no allowed node has boards of model {value}",
    "slices": "no allowed node slices its boards in {value}",
}


def words(reason: Reason | None) -> str:
    """The reason in plain English (the web layer has its own translated wording)."""
    match reason:
        case None:
            return "starts now"
        case Shortfall():
            return _shortfall(reason, never=False)
        case TooFewNodes(need=need, fit=fit):
            return f"needs {need} nodes at once; only {fit} can take it now"
        case HeldForQueue():
            return "the free resources it fits on are reserved for jobs ahead of it"
        case NotYetPlanned():
            return "not planned yet: the queue ahead of it is still being planned"
        case HeldForQuota(holder=holder, maximum=maximum, asks=asks) if reason.never:
            return (
                f"can never start: it asks {asks / 8:g} boards, "
                f"{holder}'s maximum is {maximum / 8:g}"
            )
        case HeldForQuota(holder=holder, guaranteed=guaranteed, yields_to=claim) if claim:
            return (
                f"held: {holder} may not borrow beyond its guarantee ({guaranteed / 8:g} "
                f"boards) while {claim} waits within its own"
            )
        case HeldForQuota(holder=holder, maximum=maximum, behind=True):
            return (
                f"held: a job of {holder}'s ahead of it waits for room under its maximum "
                f"({maximum / 8:g} boards) first"
            )
        case HeldForQuota(holder=holder, maximum=maximum, taken=taken, asks=asks):
            return (
                f"held: {holder} is at its maximum ({taken / 8:g} of {maximum / 8:g} boards "
                f"held or asked for ahead of it; it asks {asks / 8:g})"
            )
        case NoAllowedNode(rule="empty-pool", value=None):
            return "there is no schedulable shared node"
        case NoAllowedNode(rule=rule, value=value):
            if isinstance(value, tuple):
                value = ", ".join(map(str, value))
            return _RULES[rule].format(value=value)
        case NeverFits(cause=Shortfall() as cause):
            return "can never start: " + _shortfall(cause, never=True)
        case NeverFits(cause=TooFewNodes(need=need, fit=fit)):
            return f"can never start: needs {need} nodes at once; only {fit} can ever take it"
        case NeverFits(cause=cause):
            return "can never start: " + words(cause)
    raise TypeError(f"not a reason: {reason!r}")
