"""Where apps that build on resources plug in, so that resources never imports them.

The jobs app registers here (in its AppConfig.ready): how many boards queued jobs wait
for, which live jobs use a spec, image or node, and what to do when the inventory changes.
"""

from __future__ import annotations

from collections.abc import Callable

# () -> {accelerator model id: boards wanted by queued jobs}
demand_providers: list[Callable[[], dict[int, float]]] = []
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


def users_of(obj) -> list[tuple[str, str]]:
    return [use for provider in usage_providers for use in provider(obj)]
