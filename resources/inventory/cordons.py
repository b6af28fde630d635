"""The console's isolations, as the cluster's cordons (SPEC F3 on Kubernetes).

Each sync of a cluster compares the nodes the console holds isolated with the nodes the
cluster shows cordoned by the console (its annotation, resources.backends.kubernetes.cordon)
and patches the difference: an isolated node is cordoned, a node returned to service is
uncordoned. So a cordon missed (the cluster away, the broker away when the isolation asked
for a sync at once) is made at the next sync, and only ever once.
"""

from __future__ import annotations

import logging

from resources.backends.base import BackendError, NodeInfo
from resources.backends.kubernetes.api import ApiRefused
from resources.models import Node

log = logging.getLogger(__name__)

BY = "training-console"


def reconcile(backend, cluster, seen: list[NodeInfo]) -> tuple[list[str], list[str]]:
    """Cordon the cluster's isolated nodes and uncordon those returned to service; returns
    the names cordoned and uncordoned now. A refusal (no ``patch nodes``) is logged once a
    sync and leaves the rest as they are: the console keeps its jobs off them all the same."""
    ours = {info.name for info in seen if info.console_cordon}
    isolated = dict(
        Node.objects.filter(
            cluster=cluster, name__in=[info.name for info in seen], isolated_at__isnull=False
        ).values_list("name", "isolated_reason")
    )
    done: tuple[list[str], list[str]] = ([], [])
    steps = [(name, True) for name in sorted(set(isolated) - ours)]
    steps += [(name, False) for name in sorted(ours - set(isolated))]
    for name, isolate in steps:
        try:
            if isolate:
                backend.cordon(name, isolated[name], BY)
            else:
                backend.uncordon(name)
        except ApiRefused as error:
            log.warning("nodes of %s not cordoned or uncordoned: %s", cluster.name, error)
            break
        except BackendError as error:
            log.warning("node %s of %s: %s", name, cluster.name, error)
            continue
        done[0 if isolate else 1].append(name)
    if done != ([], []):
        log.info("cluster %s: cordoned %s, uncordoned %s", cluster.name, *done)
    return done
