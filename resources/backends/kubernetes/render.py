"""A Workload as Kubernetes objects: one ``batch.volcano.sh/v1alpha1`` Job, and a ConfigMap
with the plan's files (hostfiles; TF_CONFIG travels in the environment). Pure: plain data in,
plain dicts out, the same for the same input (names are the workload's id).

What it keeps from the launch plan, unchanged, so that a job sees on the cluster exactly what
it sees on the local backend:

* one Volcano task per replica, ``replicas: 1``, the pod's ``hostname`` the plan's host
  name and its ``subdomain`` the job's headless Service (Volcano's ``svc`` plugin), so
  ``<host>.<job>`` resolves as the plan's hostfiles, MASTER_ADDR and TF_CONFIG say;
* the environment, argv and files as planned. Volcano's ``env``, ``pytorch``,
  ``tensorflow`` and ``mpi`` plugins are never used: they would overwrite it. ``ssh`` is
  added where one replica launches onto the others (mpirun, deepspeed);
* the prechecks before the job's code, as ``k8s_precheck`` renders them (SPEC F1), then
  data preparation and lifecycle scripts as ``k8s_steps`` renders them;
* the gang (``minAvailable``), the nodes the console admitted onto (``nodeSelector``), the
  boards as the accelerator resource, CPU and memory as requests equal to limits, a
  memory-backed ``/dev/shm``, the mounts (a subPath of the storage claim, or of a host
  folder, read-only where the plan says), the job owner's identity, and the graceful time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from resources.backends.base import ReplicaSpec, Workload
from resources.backends.kubernetes import precheck as k8s_precheck
from resources.backends.kubernetes import steps as k8s_steps

API_VERSION = "batch.volcano.sh/v1alpha1"
HOSTNAME_LABEL = "kubernetes.io/hostname"
WORKLOAD_LABEL = "console.io/workload"
SHM_TARGET = "/dev/shm"
# A peer runs no command of its own: it stays up for the launcher (sshd where the image has
# it, as mpirun and deepspeed expect), until the job ends.
PEER_COMMAND = (
    "/bin/sh", "-c",
    "if [ -x /usr/sbin/sshd ]; then exec /usr/sbin/sshd -D -e; else exec sleep infinity; fi",
)  # fmt: skip
_KEY = re.compile(r"[^-._a-zA-Z0-9]")


@dataclass(frozen=True)
class ClusterTarget:
    """Where and how a cluster runs workloads (an admin's cluster settings)."""

    namespace: str
    queue: str = "default"
    accelerator_resource: str = "nvidia.com/gpu"
    storage_root: str = ""  # the console's path of the storage that mount sources lie under
    storage_claim: str = ""  # a PersistentVolumeClaim holding that storage, or
    storage_host_path: str = ""  # the same storage as a folder of every node
    shm_mib: int = 0  # /dev/shm size (0: half the replica's memory)


def files_name(workload: Workload) -> str:
    return files_name_of(workload.id)


def files_name_of(workload_id: str) -> str:
    return f"{workload_id}-files"


def file_key(replica: ReplicaSpec, path: str) -> str:
    """A ConfigMap key for one replica's file (keys allow letters, digits, "-", "_", ".")."""
    return _KEY.sub("_", f"{replica.name}{path.replace('/', '.')}")


def config_map(workload: Workload, target: ClusterTarget, owner_uid: str = "") -> dict:
    """The plan's files; owned by the Job once it exists (``owner_uid``), so that deleting
    the Job deletes them too."""
    metadata: dict = {
        "name": files_name(workload),
        "namespace": target.namespace,
        "labels": _labels(workload),
    }
    if owner_uid:
        metadata["ownerReferences"] = [
            {"apiVersion": API_VERSION, "kind": "Job", "name": workload.id, "uid": owner_uid,
             "controller": True, "blockOwnerDeletion": True},
        ]  # fmt: skip
    data = {
        file_key(replica, path): text
        for replica in workload.replicas
        for path, text in sorted(replica.files.items())
    }
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def volcano_job(workload: Workload, target: ClusterTarget) -> dict:
    if not workload.image:
        raise ValueError("a cluster runs an image: the workload names none")
    waits = any(not replica.runs_entry for replica in workload.replicas)
    spec = {
        "schedulerName": "volcano",
        "queue": workload.queue or target.queue,
        "minAvailable": workload.min_available or len(workload.replicas),
        "maxRetry": 0,  # the console decides about restarts (SPEC F3/F4), not Volcano
        "plugins": {"svc": [], **({"ssh": []} if waits else {})},
        # A lost or failed pod ends the job; the console reads why and acts on it.
        "policies": [
            {"event": "PodEvicted", "action": "AbortJob"},
            {"event": "PodFailed", "action": "AbortJob"},
        ],
        "tasks": [_task(workload, replica, target) for replica in workload.replicas],
    }
    if workload.priority_class:
        spec["priorityClassName"] = workload.priority_class
    return {
        "apiVersion": API_VERSION,
        "kind": "Job",
        "metadata": {
            "name": workload.id,
            "namespace": target.namespace,
            "labels": _labels(workload),
        },
        "spec": spec,
    }


def _labels(workload: Workload) -> dict[str, str]:
    return {**workload.labels, WORKLOAD_LABEL: workload.id}


def _task(workload: Workload, replica: ReplicaSpec, target: ClusterTarget) -> dict:
    task: dict = {
        "name": replica.name,
        "replicas": 1,
        "template": {
            "metadata": {"labels": {**_labels(workload), "console.io/replica": replica.name}},
            "spec": _pod(workload, replica, target),
        },
    }
    if replica.awaited and replica.runs_entry and not all(r.awaited for r in workload.replicas):
        # The launcher's end is the job's end (seed 002): its peers are then stopped.
        task["policies"] = [{"event": "TaskCompleted", "action": "CompleteJob"}]
    return task


def _pod(workload: Workload, replica: ReplicaSpec, target: ClusterTarget) -> dict:
    volumes, mounts = _volumes(workload, replica, target)
    env = [{"name": name, "value": value} for name, value in sorted(replica.env.items())]
    command = list(replica.argv if replica.runs_entry else PEER_COMMAND)
    container = {
        "name": "main",
        "image": workload.image,
        "command": k8s_steps.wrapped(workload, command),
        "env": env + k8s_steps.script_env(workload),
        "workingDir": "/workspace",
        "resources": _resources(replica, target),
        "volumeMounts": mounts,
    }
    pod: dict = {
        "hostname": replica.name,
        "subdomain": workload.id,
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": k8s_steps.graceful_seconds(workload),
        "containers": [container],
        "volumes": volumes,
    }
    # The prechecks first (SPEC F1): no data is copied onto a node that fails them.
    init = []
    precheck = k8s_precheck.container(workload, replica, _resources(replica, target))
    if precheck is not None:
        init.append(precheck)
        volumes.extend(k8s_precheck.volumes())
    prepare = k8s_steps.prepare_container(
        workload, replica, lambda source, path: _storage_mount(source, path, True, target)
    )
    if prepare is not None:
        prepare["resources"] = _resources(replica, target)
        init.append(prepare)
        volumes.extend(k8s_steps.prepared_volumes(workload, replica))
    if init:
        pod["initContainers"] = init
    if replica.node:
        pod["nodeSelector"] = {HOSTNAME_LABEL: replica.node}
    if workload.run_as is not None:
        run_as = workload.run_as
        pod["securityContext"] = {
            "runAsUser": run_as.uid,
            "runAsGroup": run_as.gid,
            "fsGroup": run_as.gid,
            "supplementalGroups": list(run_as.groups),
        }
    return pod


def _resources(replica: ReplicaSpec, target: ClusterTarget) -> dict:
    amounts = {"cpu": f"{replica.cpu_millicores}m", "memory": f"{replica.memory_mib}Mi"}
    if replica.slots:
        amounts[target.accelerator_resource] = str(len(replica.slots))
    return {"requests": dict(amounts), "limits": dict(amounts)}


def _volumes(workload: Workload, replica: ReplicaSpec, target: ClusterTarget):
    shm = target.shm_mib or max(64, replica.memory_mib // 2)
    volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm}Mi"}}]
    mounts = [{"name": "dshm", "mountPath": SHM_TARGET}]
    if replica.mounts:
        volumes.append(_storage_volume(target))
        prepared = k8s_steps.prepared_targets(workload, replica)
        for source, path, read_only in replica.mounts:
            if path in prepared:  # the node's copy (SPEC J19), read-only
                name = f"prepared-{prepared[path]}"
                mounts.append({"name": name, "mountPath": path, "readOnly": True})
                continue
            mounts.append(_storage_mount(source, path, read_only, target))
    if replica.files:
        volumes.append({"name": "files", "configMap": {"name": files_name(workload)}})
        for path in sorted(replica.files):
            mounts.append(
                {
                    "name": "files",
                    "mountPath": path,
                    "subPath": file_key(replica, path),
                    "readOnly": True,
                }
            )
    return volumes, mounts


def _storage_mount(source: str, path: str, read_only: bool, target: ClusterTarget) -> dict:
    return {
        "name": "storage",
        "mountPath": path,
        "subPath": _relative(source, target),
        "readOnly": bool(read_only),
    }


def _storage_volume(target: ClusterTarget) -> dict:
    if target.storage_claim:
        return {"name": "storage", "persistentVolumeClaim": {"claimName": target.storage_claim}}
    if target.storage_host_path:
        return {"name": "storage", "hostPath": {"path": target.storage_host_path,
                                                "type": "Directory"}}  # fmt: skip
    raise ValueError("the cluster has no storage for the job's mounts (a claim or a host path)")


def _relative(source: str, target: ClusterTarget) -> str:
    """A mount source as a path inside the storage (the console's path of it, relative)."""
    path, root = PurePosixPath(source), PurePosixPath(target.storage_root or "/")
    try:
        relative = path.relative_to(root)
    except ValueError:
        raise ValueError(f"mount source {source} is not in the cluster's storage") from None
    if ".." in relative.parts:
        raise ValueError(f"mount source {source} leaves the cluster's storage")
    return str(relative) if str(relative) != "." else ""
