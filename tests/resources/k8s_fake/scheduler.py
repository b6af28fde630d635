"""Volcano's gang scheduler as the fake plays it: a job's waiting pods are bound together
(at least its ``minAvailable``) on the first nodes they fit, or none is, with the words
Volcano uses for why on the pods and the PodGroup."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from resources.backends.kubernetes.nodes import parse_quantity
from tests.resources.k8s_fake import objects
from tests.resources.k8s_fake.store import Store

ENDED = frozenset({"Succeeded", "Failed"})


def requests_of(pod: dict) -> dict[str, Fraction]:
    total: dict[str, Fraction] = {}
    for container in pod["spec"].get("containers") or []:
        resources = container.get("resources") or {}
        wanted = resources.get("requests") or resources.get("limits") or {}
        for name, amount in wanted.items():
            total[name] = total.get(name, Fraction(0)) + parse_quantity(amount)
    return total


class GangScheduler:
    def __init__(self, store: Store, nodes: list[dict], write: Callable[[dict], None]) -> None:
        self.store = store
        self.nodes = nodes
        self.write = write
        self._free: dict[str, dict[str, Fraction]] | None = None

    def new_tick(self) -> None:
        """What is free is worked out again, once, on the next question."""
        self._free = None

    def schedule(self, job: dict, group: dict, pods: list[dict], lives: dict) -> None:
        waiting = [
            p
            for p in pods
            if not p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
        ]
        if not waiting:
            return
        script = lives[waiting[0]["metadata"]["uid"]].script
        bound = len(pods) - len(waiting)
        placed, message = (
            ([], script.unschedulable) if script.unschedulable else self.place(waiting)
        )
        if placed and bound + len(placed) >= job["spec"].get("minAvailable", 0):
            for pod, node_name in placed:
                self.bind(pod, node_name)
            return
        for pod in waiting:
            conditions = objects.pod_conditions(False, False, message=message)
            if [c.get("message") for c in pod["status"].get("conditions") or ()] != [message]:
                pod["status"]["conditions"] = conditions
                self.write(pod)
        gang = (
            f"{len(waiting)}/{len(pods)} tasks in gang unschedulable: pod group is not "
            f"ready, {len(waiting)} Pending, {job['spec'].get('minAvailable', 0)} "
            f"minAvailable; Pending: {len(waiting)} Unschedulable"
        )
        conditions = group["status"].get("conditions") or []
        if not any(c["type"] == "Unschedulable" and c["message"] == gang for c in conditions):
            group["status"]["conditions"] = [
                objects.podgroup_condition("Unschedulable", "NotEnoughResources", gang)
            ]
            self.write(group)

    def free(self) -> dict[str, dict[str, Fraction]]:
        if self._free is None:
            self._free = {}
            for item in self.nodes:
                allocatable = item["status"].get("allocatable") or {}
                self._free[item["metadata"]["name"]] = {
                    k: parse_quantity(v) for k, v in allocatable.items()
                }
            for pod in self.store.of("pods"):
                name = pod["spec"].get("nodeName")
                if name in self._free and pod["status"]["phase"] not in ENDED:
                    for key, amount in requests_of(pod).items():
                        self._free[name][key] = self._free[name].get(key, 0) - amount
        return self._free

    def place(self, waiting: list[dict]) -> tuple[list[tuple[dict, str]], str]:
        """Each pod on the first node it fits (all of them, or as many as fit); the
        scheduler's message for the first that fits nowhere."""
        free = {name: dict(left) for name, left in self.free().items()}
        placed = []
        for pod in waiting:
            wanted = requests_of(pod)
            why: dict[str, int] = {}
            for item in self.nodes:
                reason = self.unfit(item, pod, wanted, free[item["metadata"]["name"]])
                if not reason:
                    left = free[item["metadata"]["name"]]
                    for key, amount in wanted.items():
                        left[key] = left.get(key, 0) - amount
                    placed.append((pod, item["metadata"]["name"]))
                    break
                why[reason] = why.get(reason, 0) + 1
            else:
                # Volcano's FitErrors: "<count> <reason>" strings, sorted as text.
                said = ", ".join(sorted(f"{count} {reason}" for reason, count in why.items()))
                return placed, f"0/{len(self.nodes)} nodes are unavailable: {said}."
        return placed, ""

    @staticmethod
    def unfit(item: dict, pod: dict, wanted: dict, left: dict) -> str:
        labels = item["metadata"].get("labels") or {}
        selector = pod["spec"].get("nodeSelector") or {}
        if any(labels.get(k) != v for k, v in selector.items()):
            return "node(s) didn't match Pod's node affinity/selector"
        if item["spec"].get("unschedulable"):
            return "node(s) were unschedulable"
        ready = [c for c in item["status"].get("conditions") or () if c["type"] == "Ready"]
        if not ready or ready[0]["status"] != "True":
            return "node(s) had untolerated taint {node.kubernetes.io/unreachable: }"
        for key, amount in sorted(wanted.items()):
            if left.get(key, 0) < amount:
                return f"Insufficient {key}"
        return ""

    def bind(self, pod: dict, node_name: str) -> None:
        free = self.free()[node_name]
        for key, amount in requests_of(pod).items():
            free[key] = free.get(key, 0) - amount
        pod["spec"]["nodeName"] = node_name
        pod["status"] |= {
            "conditions": objects.pod_conditions(True, False),
            "hostIP": "10.0.0.10",
            "hostIPs": [{"ip": "10.0.0.10"}],
        }
        self.write(pod)
