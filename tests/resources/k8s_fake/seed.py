"""Volcano Jobs to send or to hold: a minimal valid Job body, and many jobs already running
(with their PodGroups and pods) for a benchmark's fake."""

from __future__ import annotations

import time

from tests.resources.k8s_fake import objects
from tests.resources.k8s_fake.script import PodLife

WORKLOAD_LABEL = "console.io/workload"


def volcano_job(
    name: str,
    *,
    namespace: str = "ml",
    tasks: int = 1,
    min_available: int | None = None,
    cpu: str = "1",
    memory: str = "1Gi",
    gpus: int = 0,
    labels: dict[str, str] | None = None,
    grace: int = 30,
) -> dict:
    """A Volcano Job as the console renders one (its shape, not its contents)."""
    amounts = {"cpu": cpu, "memory": memory} | ({"nvidia.com/gpu": str(gpus)} if gpus else {})
    all_labels = {WORKLOAD_LABEL: name, **(labels or {})}
    return {
        "apiVersion": objects.JOB_API,
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": all_labels},
        "spec": {
            "schedulerName": "volcano",
            "queue": "default",
            "minAvailable": tasks if min_available is None else min_available,
            "maxRetry": 0,
            "plugins": {"svc": []},
            "policies": [{"event": "PodFailed", "action": "AbortJob"}],
            "tasks": [
                {
                    "name": f"worker-{index}",
                    "replicas": 1,
                    "template": {
                        "metadata": {"labels": dict(all_labels)},
                        "spec": {
                            "restartPolicy": "Never",
                            "terminationGracePeriodSeconds": grace,
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "busybox:1.36",
                                    "command": ["sleep", "infinity"],
                                    "resources": {"requests": amounts, "limits": dict(amounts)},
                                }
                            ],
                        },
                    },
                }
                for index in range(tasks)
            ],
        },
    }


def seed_running(fake, names: list[str], namespace: str = "ml", tasks: int = 1) -> None:
    """Jobs that run already (as after the console submitted them and Volcano started
    them): each with its PodGroup, and pods bound round-robin to the fake's nodes, their
    containers running as their script says. Nothing is checked: a benchmark's setup."""
    controller, store = fake.controller, fake.store
    now = time.time()
    nodes = [n["metadata"]["name"] for n in fake.nodes] or ["node-0"]
    with store.lock:
        for number, name in enumerate(names):
            job = store.add("jobs", volcano_job(name, namespace=namespace, tasks=tasks), now)
            job["status"] = {"minAvailable": tasks}
            controller.move(job, "Pending", now)
            controller.move(job, "Running", now)
            group = objects.podgroup(job)
            group["status"] = {"phase": "Running", "running": tasks}
            store.add("podgroups", group, now)
            for task in job["spec"]["tasks"]:
                pod = store.add("pods", objects.pod(job, task, 0), now)
                pod["spec"]["nodeName"] = nodes[number % len(nodes)]
                life = PodLife(controller.script_for(name), bound_at=now)
                controller.lives[pod["metadata"]["uid"]] = life
                controller.start(pod, life, now)
