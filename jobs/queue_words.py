"""The scheduler's reasons in the user's language (SPEC J24: say *why* in plain words)."""

from __future__ import annotations

from dataclasses import asdict, fields

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from console.words import plural_number
from jobs.scheduling.reasons import (
    HeldForQueue,
    NeverFits,
    NoAllowedNode,
    Reason,
    Shortfall,
    TooFewNodes,
)


class Names:
    """Names of the ids reasons carry (accelerator models, pools), loaded on first use."""

    def __init__(self):
        self._models: dict[int, str] | None = None
        self._pools: dict[int, str] | None = None

    def model(self, pk) -> str:
        if self._models is None:
            from resources.models import AcceleratorModel

            self._models = dict(AcceleratorModel.objects.values_list("pk", "name"))
        return self._models.get(pk, str(pk))

    def pool(self, pk) -> str:
        if self._pools is None:
            from resources.models import ResourcePool

            self._pools = dict(ResourcePool.objects.values_list("pk", "name"))
        return self._pools.get(pk, str(pk))


def _amount(resource: str, value: int) -> str:
    if resource == "cpu":
        cores = value / 1000
        return ngettext("%(n)s CPU", "%(n)s CPUs", plural_number(cores)) % {"n": f"{cores:g}"}
    return _("%(n)s GiB of memory") % {"n": f"{value / 1024:g}"}


def _shortfall(reason: Shortfall, names: Names, never: bool) -> str:
    where = f" ({reason.node_name})" if reason.node_name else ""
    if reason.resource == "boards":
        model = names.model(reason.model)
        if reason.slices > 1:
            if never:
                return _(
                    "needs 1/%(s)s of a %(model)s board; no allowed node slices its boards that way"
                ) % {"s": reason.slices, "model": model}
            return _("needs 1/%(s)s of a %(model)s board; none is free on the allowed nodes") % {
                "s": reason.slices,
                "model": model,
            }
        values = {"need": reason.need, "model": model, "free": reason.best_free, "where": where}
        count = plural_number(reason.need)
        if never:
            return (
                ngettext(
                    "needs %(need)s board of %(model)s on one node; the most any allowed "
                    "node has is %(free)s%(where)s",
                    "needs %(need)s boards of %(model)s on one node; the most any allowed "
                    "node has is %(free)s%(where)s",
                    count,
                )
                % values
            )
        return (
            ngettext(
                "needs %(need)s board of %(model)s on one node; the most free on any allowed "
                "node is %(free)s%(where)s",
                "needs %(need)s boards of %(model)s on one node; the most free on any allowed "
                "node is %(free)s%(where)s",
                count,
            )
            % values
        )
    values = {
        "need": _amount(reason.resource, reason.need),
        "free": _amount(reason.resource, reason.best_free),
        "where": where,
    }
    if never:
        return (
            _("needs %(need)s on one node; the most any allowed node has is %(free)s%(where)s")
            % values
        )
    return (
        _("needs %(need)s on one node; the most free on any allowed node is %(free)s%(where)s")
        % values
    )


def _rule(reason: NoAllowedNode, names: Names) -> str:
    value = reason.value
    if reason.rule == "pool-not-allowed":
        return _("its project may not use pool %(pool)s") % {"pool": names.pool(value)}
    if reason.rule == "empty-pool":
        if value is None:
            return _("there is no schedulable shared node")
        return _("pool %(pool)s has no schedulable node") % {"pool": names.pool(value)}
    if reason.rule == "unknown-names":
        listed = ", ".join(map(str, value)) if isinstance(value, tuple | list) else value
        return _("no schedulable node is named %(names)s") % {"names": listed}
    if reason.rule == "names-elsewhere":
        return _("the nodes it is pinned to are not in its pool")
    if reason.rule == "driver":
        from resources.models import DriverVersion

        driver = DriverVersion.objects.filter(pk=value).first()
        return _("no allowed node has driver version %(v)s") % {"v": driver or value}
    if reason.rule == "model":
        return _("no allowed node has %(model)s boards") % {"model": names.model(value)}
    return _("no allowed node slices its boards in %(n)s") % {"n": value}


def say(reason: Reason | None, names: Names | None = None) -> str:
    names = names or Names()
    match reason:
        case None:
            return _("starts now")
        case Shortfall():
            return _shortfall(reason, names, never=False)
        case TooFewNodes(need=need, fit=fit):
            return ngettext(
                "needs %(need)s node at once; only %(fit)s can take it now",
                "needs %(need)s nodes at once; only %(fit)s can take it now",
                need,
            ) % {"need": need, "fit": fit}
        case HeldForQueue():
            return _("it fits on free resources, but they are reserved for jobs ahead of it")
        case NoAllowedNode():
            return _rule(reason, names)
        case NeverFits(cause=Shortfall() as cause):
            return _("can never start: %(why)s") % {"why": _shortfall(cause, names, never=True)}
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
    names = names or Names()
    cause = reason.cause
    if isinstance(cause, Shortfall):
        return _shortfall(cause, names, never=True)
    if isinstance(cause, TooFewNodes):
        return ngettext(
            "needs %(need)s node at once; only %(fit)s can ever take it",
            "needs %(need)s nodes at once; only %(fit)s can ever take it",
            cause.need,
        ) % {"need": cause.need, "fit": cause.fit}
    return say(cause, names)


KINDS = {kind.__name__: kind for kind in (Shortfall, TooFewNodes, NoAllowedNode, HeldForQueue)}


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
