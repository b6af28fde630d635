"""Which nodes a job's spec may use at all, asked once per rules and demand in a pass."""

from __future__ import annotations

from jobs.scheduling.data import Alternative, QueuedJob
from jobs.scheduling.node_fit import NodeInfo
from jobs.scheduling.reasons import NoAllowedNode
from jobs.scheduling.rules import allowed, idle_count, rule_key


class Capable:
    """The nodes' answers a :class:`~.core.Schedule` keeps for its searches (queues repeat
    a few specs and rules)."""

    infos: list[NodeInfo]

    def __init__(self) -> None:
        self._capable: dict[tuple, tuple[list[int], int]] = {}
        self._capable_sets: dict[tuple, frozenset[int]] = {}
        # Equal sets as one object: specs of one pool share their nodes, and what is kept
        # per set of nodes (settled.Tracker) is then found by identity, not compared whole.
        self._interned: dict[frozenset[int], frozenset[int]] = {}
        self._allowed: dict[tuple, list[NodeInfo] | NoAllowedNode] = {}  # per rule_key

    def capable(self, job: QueuedJob, alternative: Alternative) -> tuple[list[int], int]:
        """Indices of the nodes allowed and able to hold a replica once idle, and how many
        replicas those could hold then (cached: queues repeat a few specs and rules)."""
        rules = rule_key(job)
        key = (rules, alternative.demand)
        if key not in self._capable:
            nodes = self._allowed.get(rules)
            if nodes is None:
                nodes = self._allowed[rules] = allowed(self.infos, job)
            pairs = []
            if not isinstance(nodes, NoAllowedNode):
                # Nodes of one kind and base usage hold alike: each such is asked once.
                counts: dict[tuple, int] = {}
                for info in nodes:
                    alike = (info.kind, info.base_cpu, info.base_mem, info.base_mask)
                    count = counts.get(alike)
                    if count is None:
                        count = counts[alike] = idle_count(alternative.demand, info, base=True)
                    pairs.append((info.index, count))
            self._capable[key] = (
                [index for index, count in pairs if count],
                sum(count for _, count in pairs),
            )
        return self._capable[key]

    def alike(self) -> Capable:
        """A Capable of the same nodes that shares these answers (each asked once for both)
        but holds no reference to this one."""
        other = Capable()
        other.infos = self.infos
        other._capable, other._capable_sets, other._allowed, other._interned = (
            self._capable, self._capable_sets, self._allowed, self._interned
        )  # fmt: skip
        return other

    def placeable(self, job: QueuedJob, alternative: Alternative) -> bool:
        """Whether the nodes allowed to the job could ever hold it on this spec, once idle."""
        return self.capable(job, alternative)[1] >= alternative.min_nodes

    def capable_set(self, job: QueuedJob, alternative: Alternative) -> frozenset[int]:
        """:meth:`capable`'s nodes as a set (a re-booked reservation's nodes are checked
        against it, once per job of a long queue)."""
        key = (rule_key(job), alternative.demand)
        found = self._capable_sets.get(key)
        if found is None:
            found = frozenset(self.capable(job, alternative)[0])
            found = self._capable_sets[key] = self._interned.setdefault(found, found)
        return found
