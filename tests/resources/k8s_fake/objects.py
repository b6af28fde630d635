"""The shapes of what the fake API server sends: Nodes as a kubelet reports them, Status
errors, and the Pods and PodGroups that Volcano's controller, the scheduler and the kubelet
write for a Volcano Job. Plain dicts, the same field names as the API's JSON."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

TOKEN = "test-token-0123456789"
USER = "system:serviceaccount:console:console"  # who our token is, in 403 messages
JOB_API = "batch.volcano.sh/v1alpha1"
PODGROUP_API = "scheduling.volcano.sh/v1beta1"


def stamp(at: float | None = None) -> str:
    """RFC 3339 with whole seconds, as metadata and conditions carry time."""
    return datetime.fromtimestamp(time.time() if at is None else at, UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


def nano_stamp(at: float) -> str:
    """The kubelet's log prefix: RFC 3339 with nine fixed digits (sorts as text)."""
    moment = datetime.fromtimestamp(at, UTC)
    nanos = round((at - int(at)) * 1e9) % 1_000_000_000
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z"


def parse_stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def node(
    name: str,
    *,
    cpu: str = "16",
    memory: str = "65536Mi",
    extended: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    ready: bool = True,
    unschedulable: bool | None = None,
    allocatable: dict[str, str] | None = None,
    os_image: str = "Ubuntu 22.04.4 LTS",
    kernel: str = "5.15.0-105-generic",
) -> dict[str, Any]:
    """A v1 Node as the API sends it. ``allocatable`` replaces the computed one entirely."""
    stamp = "2025-05-01T08:00:00Z"
    resources = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "467890Mi"}
    resources.update(extended or {})
    spec: dict[str, Any] = {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]}
    if unschedulable is not None:
        spec["unschedulable"] = unschedulable
        if unschedulable:
            spec["taints"] = [
                {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                 "timeAdded": stamp}
            ]  # fmt: skip
    conditions = [
        {"type": kind, "status": "False", "reason": f"Kubelet{reason}",
         "message": f"kubelet {reason.lower()}", "lastHeartbeatTime": stamp,
         "lastTransitionTime": stamp}
        for kind, reason in (
            ("MemoryPressure", "HasSufficientMemory"),
            ("DiskPressure", "HasNoDiskPressure"),
            ("PIDPressure", "HasSufficientPID"),
        )
    ]  # fmt: skip
    conditions.append(
        {
            "type": "Ready",
            "status": "True" if ready else "Unknown",
            "reason": "KubeletReady" if ready else "NodeStatusUnknown",
            "message": "kubelet is posting ready status"
            if ready
            else "Kubelet stopped posting node status.",
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp,
        }
    )
    return {
        "metadata": {
            "name": name,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
            "resourceVersion": "4242",
            "creationTimestamp": stamp,
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                **(labels or {}),
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": resources if allocatable is None else allocatable,
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.10"},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": "5f0c1d2e3a4b4c5d8e9f0a1b2c3d4e5f",
                "systemUUID": "4c4c4544-0042-3510-8052-b2c04f4e3732",
                "bootID": "2a9f0c3e-1b6d-4e8a-9f7c-5d4b3a291807",
                "kernelVersion": kernel,
                "osImage": os_image,
                "containerRuntimeVersion": "containerd://1.7.22",
                "kubeletVersion": "v1.31.2",
                "kubeProxyVersion": "v1.31.2",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def status(code: int, reason: str, message: str, details: dict | None = None) -> dict[str, Any]:
    """A failure ``Status`` as the API server sends it with every error."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        body["details"] = details
    return body


def node_list(nodes: list[dict[str, Any]], query: dict[str, str] | None = None) -> dict[str, Any]:
    """One page of a NodeList; the continue token is simply the next offset."""
    query = query or {}
    start = int(query.get("continue") or 0)
    limit = int(query.get("limit") or 0) or len(nodes)
    metadata: dict[str, Any] = {"resourceVersion": "4242"}
    if start + limit < len(nodes):
        metadata["continue"] = str(start + limit)
        metadata["remainingItemCount"] = len(nodes) - start - limit
    items = nodes[start : start + limit]
    return {"kind": "NodeList", "apiVersion": "v1", "metadata": metadata, "items": items}


def owner_reference(job: dict) -> dict:
    return {
        "apiVersion": JOB_API,
        "kind": "Job",
        "name": job["metadata"]["name"],
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def podgroup_name(job: dict) -> str:
    """Volcano names a job's PodGroup ``<job>-<job uid>``."""
    return f"{job['metadata']['name']}-{job['metadata']['uid']}"


def podgroup(job: dict) -> dict:
    """The PodGroup Volcano's job controller makes for a job (the job's labels copied)."""
    spec = job["spec"]
    metadata = job["metadata"]
    tasks = spec.get("tasks") or []
    return {
        "apiVersion": PODGROUP_API,
        "kind": "PodGroup",
        "metadata": {
            "name": podgroup_name(job),
            "namespace": metadata["namespace"],
            "labels": dict(metadata.get("labels") or {}),
            "annotations": dict(metadata.get("annotations") or {}),
            "ownerReferences": [owner_reference(job)],
        },
        "spec": {
            "minMember": spec.get("minAvailable", 0),
            "minTaskMember": {
                t["name"]: t.get("minAvailable", t.get("replicas", 1)) for t in tasks
            },
            "queue": spec.get("queue", "default"),
            **(
                {"priorityClassName": spec["priorityClassName"]}
                if spec.get("priorityClassName")
                else {}
            ),
        },
        "status": {"phase": "Pending"},
    }


def podgroup_condition(kind: str, reason: str, message: str) -> dict:
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "transitionID": str(uuid.uuid4()),
        "lastTransitionTime": stamp(),
    }


def pod(job: dict, task: dict, index: int) -> dict:
    """A pod of one task as Volcano's job controller creates it: ``<job>-<task>-<index>``,
    Volcano's labels and annotations over the template's own, owned by the job."""
    metadata = job["metadata"]
    name = metadata["name"]
    template = task.get("template") or {}
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels |= {
        "volcano.sh/job-name": name,
        "volcano.sh/job-namespace": metadata["namespace"],
        "volcano.sh/queue-name": job["spec"].get("queue", "default"),
        "volcano.sh/task-spec": task["name"],
        "volcano.sh/task-index": str(index),
    }
    annotations = dict((template.get("metadata") or {}).get("annotations") or {})
    annotations |= {
        "scheduling.k8s.io/group-name": podgroup_name(job),
        "volcano.sh/job-name": name,
        "volcano.sh/job-version": "0",
        "volcano.sh/queue-name": job["spec"].get("queue", "default"),
        "volcano.sh/task-spec": task["name"],
        "volcano.sh/task-index": str(index),
    }
    spec = dict(template.get("spec") or {})
    spec["schedulerName"] = job["spec"].get("schedulerName") or "volcano"
    spec.setdefault("terminationGracePeriodSeconds", 30)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{task['name']}-{index}",
            "namespace": metadata["namespace"],
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_reference(job)],
        },
        "spec": spec,
        "status": {"phase": "Pending", "qosClass": "Guaranteed"},
    }


def pod_conditions(scheduled: bool, ready: bool, *, reason: str = "", message: str = ""):
    now = stamp()
    if not scheduled:
        return [
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": now,
                "reason": reason or "Unschedulable",
                "message": message,
            }
        ]
    conditions = []
    for kind in (
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ):
        ok = kind in ("Initialized", "PodScheduled", "PodReadyToStartContainers") or ready
        condition = {
            "type": kind,
            "status": "True" if ok else "False",
            "lastProbeTime": None,
            "lastTransitionTime": now,
        }
        if not ok and reason:  # ended: PodCompleted or PodFailed, no message
            condition["reason"] = reason
        elif not ok:
            condition["reason"] = "ContainersNotReady"
            condition["message"] = message or "containers with unready status: [main]"
        conditions.append(condition)
    return conditions


def container_status(pod_: dict, state: dict, *, ready: bool = False) -> dict:
    container = (pod_["spec"].get("containers") or [{}])[0]
    image = container.get("image", "")
    status = {
        "name": container.get("name", "main"),
        "state": state,
        "lastState": {},
        "ready": ready,
        "restartCount": 0,
        "image": image,
        "imageID": "",
        "started": "running" in state,
    }
    if "waiting" not in state:
        status["imageID"] = (
            f"{image.split(':')[0]}@sha256:{uuid.uuid5(uuid.NAMESPACE_URL, image).hex * 2}"
        )
        status["containerID"] = f"containerd://{uuid.uuid4().hex * 2}"
    return status


def pod_metrics(pod_: dict, cpu_nanocores: int, memory_kib: int) -> dict:
    """metrics-server's PodMetrics: usage in nanocores and KiB, as it reports them."""
    metadata = pod_["metadata"]
    return {
        "kind": "PodMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {
            "name": metadata["name"],
            "namespace": metadata["namespace"],
            "creationTimestamp": stamp(),
            "labels": dict(metadata.get("labels") or {}),
        },
        "timestamp": stamp(),
        "window": "10.048s",
        # The scripted usage is the pod's: all of it on its first container.
        "containers": [
            {
                "name": c.get("name", "main"),
                "usage": {"cpu": f"{cpu_nanocores}n", "memory": f"{memory_kib}Ki"},
            }
            for c in (pod_["spec"].get("containers") or [])[:1]
        ],
    }
