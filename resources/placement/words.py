"""Why a spec cannot start (:mod:`resources.placement.answer`'s reasons) in the reader's language.

The job form, its availability panel, /cluster/ and the queue word the same reasons alike.
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from console.words import plural_number
from resources.placement.answer import NeverFits, NoAllowedNode, Shortfall, TooFewNodes


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


def amount(resource: str, value: int) -> str:
    if resource == "cpu":
        cores = value / 1000
        return ngettext("%(n)s CPU", "%(n)s CPUs", plural_number(cores)) % {"n": f"{cores:g}"}
    return _("%(n)s GiB of memory") % {"n": f"{value / 1024:g}"}


def shortfall_text(reason: Shortfall, names: Names, never: bool) -> str:
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
        "need": amount(reason.resource, reason.need),
        "free": amount(reason.resource, reason.best_free),
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


def rule_text(reason: NoAllowedNode, names: Names) -> str:
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


def never_text(reason: NeverFits, names: Names) -> str:
    """What makes a spec impossible here, without a "can never start" lead."""
    cause = reason.cause
    if isinstance(cause, Shortfall):
        return shortfall_text(cause, names, never=True)
    if isinstance(cause, TooFewNodes):
        return ngettext(
            "needs %(need)s node at once; only %(fit)s can ever take it",
            "needs %(need)s nodes at once; only %(fit)s can ever take it",
            cause.need,
        ) % {"need": cause.need, "fit": cause.fit}
    return rule_text(cause, names)


def elsewhere_text(others: list[int | None], names: Names) -> str:
    """Where a job that can never start as asked could (:func:`placement.elsewhere`)."""
    pools = [names.pool(pool) for pool in others if pool is not None]
    if pools:
        return ngettext(
            "It could start in pool %(pools)s: choose it as the dedicated pool.",
            "It could start in pools %(pools)s: choose one as the dedicated pool.",
            len(pools),
        ) % {"pools": ", ".join(pools)}
    if None in others:
        return _("It could start on the shared nodes: leave the dedicated pool empty.")
    return ""
