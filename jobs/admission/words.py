"""The scheduler's reasons in the user's language (SPEC J24: say *why* in plain words)."""

from __future__ import annotations

from dataclasses import asdict, fields

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext

from console.words import Said, said
from jobs.scheduling.quotas import Borrowed
from jobs.scheduling.reasons import (
    HeldForQueue,
    HeldForQuota,
    NeverFits,
    NoAllowedNode,
    NotYetPlanned,
    Reason,
    Shortfall,
    TooFewNodes,
)
from resources.placement.words import Names, never_text, rule_text, shortfall_text

__all__ = [
    "Names",
    "admitted_borrowing",
    "borrowed_text",
    "from_json",
    "quota_text",
    "say",
    "to_json",
    "why_never",
    "word_jobs",
]


def say(reason: Reason | None, names: Names | None = None) -> str:
    names = names or Names()
    match reason:
        case None:
            return _("starts now")
        case Shortfall():
            return shortfall_text(reason, names, never=False)
        case TooFewNodes(need=need, fit=fit):
            return ngettext(
                "needs %(need)s node at once; only %(fit)s can take it now",
                "needs %(need)s nodes at once; only %(fit)s can take it now",
                need,
            ) % {"need": need, "fit": fit}
        case HeldForQueue():
            return _("it fits on free resources, but they are reserved for jobs ahead of it")
        case HeldForQuota():
            return quota_text(reason, names)
        case NotYetPlanned():
            return _(
                "not planned yet: a long queue is planned a part at a time, and planning has "
                "not reached this job; its latest start shows within a few admission passes"
            )
        case NoAllowedNode():
            return rule_text(reason, names)
        case NeverFits(cause=Shortfall() as cause):
            return _("can never start: %(why)s") % {"why": shortfall_text(cause, names, never=True)}
        case NeverFits(cause=TooFewNodes(need=need, fit=fit)):
            return ngettext(
                "can never start: needs %(need)s node at once; only %(fit)s can ever take it",
                "can never start: needs %(need)s nodes at once; only %(fit)s can ever take it",
                need,
            ) % {"need": need, "fit": fit}
        case NeverFits(cause=cause):
            return _("can never start: %(why)s") % {"why": say(cause, names)}
    return str(reason)


def why_never(reason: NeverFits, names: Names | None = None) -> str:
    """What makes a job impossible on this inventory, without the "can never start" lead."""
    return never_text(reason, names or Names())


def _yields_text(reason: HeldForQuota, values: dict) -> str:
    """SPEC G2: held to its guarantee (or, with none, to nothing) while another team's job
    waits within its own."""
    if not reason.guaranteed:
        return (
            _(
                "held for the quota: %(holder)s has no guarantee of %(model)s boards; it may "
                "borrow idle ones, but not while %(claimant)s waits within its own. It joins "
                "the queue once %(claimant)s has started."
            )
            % values
        )
    return (
        _(
            "held for the quota: the guarantee of %(holder)s (%(model)s boards: "
            "%(guaranteed)s) is taken by its running jobs and the jobs ahead of this one "
            "(%(taken)s); beyond it, it may borrow idle boards, but not while %(claimant)s "
            "waits within its own. It joins the queue once %(claimant)s has started."
        )
        % values
    )


def quota_text(reason: HeldForQuota, names: Names, *, lead: bool = True) -> str:
    """SPEC G1: whose maximum holds it, how far it is taken, and what the job asks; for a
    job asking more than the maximum, that it never can start (``lead``: with those words
    first, as the queue says it; without, as the form's refusal does)."""
    values = {
        "holder": reason.holder,
        "model": names.model(reason.model),
        "maximum": f"{reason.maximum / 8:g}",
        "taken": f"{reason.taken / 8:g}",
        "asks": f"{reason.asks / 8:g}",
        "pool": names.pool(reason.pool) if reason.pool is not None else "",
        "guaranteed": f"{reason.guaranteed / 8:g}",
        "claimant": reason.yields_to,
    }
    if reason.yields_to and not reason.never:
        return _yields_text(reason, values)
    if reason.never:
        why = (
            _(
                "it asks %(asks)s %(model)s boards, more than %(holder)s may ever hold at once "
                "(its maximum is %(maximum)s)"
            )
            % values
        )
        return _("can never start: %(why)s") % {"why": why} if lead else why
    if reason.behind:
        return (
            _(
                "held for the quota: a job of %(holder)s ahead of this one waits for room under "
                "its maximum of %(maximum)s %(model)s boards first; this one comes after it."
            )
            % values
        )
    if reason.pool is not None:
        return (
            _(
                "held for the quota: %(holder)s may hold at most %(maximum)s %(model)s boards in "
                "pool %(pool)s, and its running jobs and the jobs ahead of this one take "
                "%(taken)s; this one asks %(asks)s. It joins the queue when they free enough."
            )
            % values
        )
    return (
        _(
            "held for the quota: %(holder)s may hold at most %(maximum)s %(model)s boards, and "
            "its running jobs and the jobs ahead of this one take %(taken)s; this one asks "
            "%(asks)s. It joins the queue when they free enough."
        )
        % values
    )


BORROWED = gettext_noop(
    "On borrowed boards: with it, %(holder)s holds %(holds)s %(model)s boards, beyond its "
    "guarantee of %(guaranteed)s."
)


# A project without a quota there (jobs.admission.caps: guaranteed none).
UNGUARANTEED = gettext_noop(
    "On borrowed boards: %(holder)s has no guarantee of %(model)s boards; with it, it holds "
    "%(holds)s."
)


def _borrowed_words(lent: Borrowed) -> str:
    return BORROWED if lent.guaranteed else UNGUARANTEED


def _borrowed_values(lent: Borrowed, names: Names) -> dict:
    return {
        "holder": lent.holder,
        "model": names.model(lent.model),
        "holds": f"{lent.holds / 8:g}",
        "guaranteed": f"{lent.guaranteed / 8:g}",
    }


def borrowed_text(lent: Borrowed, names: Names) -> str:
    """SPEC G2: an admission beyond its project's guarantee, in the active language."""
    return _(_borrowed_words(lent)) % _borrowed_values(lent, names)


def admitted_borrowing(admitted: Said, lent: Borrowed, names: Names) -> Said:
    """An admission event's message with what it borrows, kept to be worded in each
    reader's language."""
    return said(
        gettext_noop("%(admitted)s %(borrowed)s"),
        admitted=admitted,
        borrowed=said(_borrowed_words(lent), **_borrowed_values(lent, names)),
    )


KINDS = {
    kind.__name__: kind
    for kind in (Shortfall, TooFewNodes, NoAllowedNode, HeldForQueue, HeldForQuota, NotYetPlanned)
}


def to_json(reason: Reason | None) -> dict | None:
    """A reason as JSON, so that pages can word it in each reader's language."""
    if reason is None:
        return None
    if isinstance(reason, NeverFits):
        return {"kind": "NeverFits", "cause": to_json(reason.cause)}
    data = asdict(reason)
    if isinstance(data.get("value"), tuple):
        data["value"] = list(data["value"])
    return {"kind": type(reason).__name__, **data}


def from_json(data: dict | None) -> Reason | None:
    if not data:
        return None
    kind = data.get("kind")
    if kind == "NeverFits":
        return NeverFits(from_json(data.get("cause")))
    cls = KINDS.get(kind)
    if cls is None:
        return None
    names = {f.name for f in fields(cls)}
    return cls(**{key: value for key, value in data.items() if key in names})


def word_jobs(jobs) -> None:
    """Set ``reason_text`` on each job from its stored reason, in the active language."""
    names = Names()
    for job in jobs:
        reason = from_json(job.wait_detail)
        job.reason_text = say(reason, names) if reason else ""
