"""Where apps that build on resources plug in, so that resources never imports them.

The jobs app registers here (in its AppConfig.ready): how many boards queued jobs wait
for, which live jobs use a spec, image or node, and what to do when the inventory changes.
"""

from __future__ import annotations

from collections.abc import Callable

# () -> {accelerator model id: boards wanted by queued jobs}
demand_providers: list[Callable[[], dict[int, float]]] = []
# (project ids or None for all) -> [Held]: boards queued jobs wait for, by project, model
# and pool (the quota pages' "waiting")
waiting_providers: list[Callable[[object], list]] = []
# (object) -> [(label, url or "")]: live workloads that use a spec, image or node
usage_providers: list[Callable[[object], list[tuple[str, str]]]] = []
# () -> None: called on commit after the inventory changed
inventory_listeners: list[Callable[[], None]] = []


def queued_demand() -> dict[int, float]:
    total: dict[int, float] = {}
    for provider in demand_providers:
        for model, boards in provider().items():
            total[model] = total.get(model, 0) + boards
    return total


def waiting_for(projects=None) -> list:
    """What queued jobs of ``projects`` (every project: None) wait for, as
    :class:`resources.quotas.Held` rows."""
    return [row for provider in waiting_providers for row in provider(projects)]


def users_of(obj) -> list[tuple[str, str]]:
    return [use for provider in usage_providers for use in provider(obj)]
