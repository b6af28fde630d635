"""A Volcano Job, its Pods and its PodGroup (as the API sends them) as a WorkloadStatus.

Pure. Volcano moves a Job through Pending → Running → Completing → Completed, or to
Aborting/Aborted/Failed when a pod fails (the console's policies abort the job: restarts are
the console's decision), and Terminating/Terminated when it is deleted. The console only
needs to know: not started yet (and why: the queue, the scheduler's message, an image that
cannot be pulled), running, or ended (and how: which replica, exit code, out of memory, or
lost: a pod the cluster took away, which is a fault, not the job's code failing).
"""

from __future__ import annotations

from resources.backends.base import (
    ReplicaState,
    ReplicaStatus,
    WorkloadState,
    WorkloadStatus,
)

TASK_LABEL = "volcano.sh/task-spec"
# Waiting reasons that will not go away by waiting: the pod never starts.
HOPELESS = frozenset({"InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError"})
PULL_TROUBLE = frozenset({"ErrImagePull", "ImagePullBackOff"})
# A pod's status.reason when its node went away or the kubelet evicted it (seed 003).
LOST_REASONS = frozenset({"NodeLost", "Evicted", "UnexpectedAdmissionError"})


def _container(pod: dict) -> dict:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return statuses[0] if statuses else {}


def task_of(pod: dict) -> str:
    metadata = pod.get("metadata") or {}
    return (metadata.get("labels") or {}).get(TASK_LABEL) or metadata.get("name", "")


def replica_status(pod: dict) -> ReplicaStatus:
    name = task_of(pod)
    phase = (pod.get("status") or {}).get("phase", "Pending")
    state = _container(pod).get("state") or {}
    terminated = state.get("terminated")
    if phase == "Running" and not (pod.get("metadata") or {}).get("deletionTimestamp"):
        return ReplicaStatus(name, ReplicaState.RUNNING)
    if phase == "Running":
        return ReplicaStatus(name, ReplicaState.RUNNING, reason="stopping")
    if phase in ("Succeeded", "Failed") or terminated:
        step = _failed_step(pod) if not terminated else None
        if step is not None:  # an init container failed: the job's own never started
            code = step.get("exitCode")
            why = f"{name}: its {step.get('name')} step failed (exit code {code})"
            return ReplicaStatus(name, ReplicaState.FAILED, None, why)
        code = (terminated or {}).get("exitCode")
        if phase == "Succeeded" or code == 0:
            return ReplicaStatus(name, ReplicaState.SUCCEEDED, 0)
        return ReplicaStatus(name, ReplicaState.FAILED, code, _ended_why(name, terminated or {}))
    waiting = state.get("waiting") or {}
    if waiting.get("reason") in HOPELESS | PULL_TROUBLE:
        message = waiting.get("message") or waiting["reason"]
        return ReplicaStatus(name, ReplicaState.PENDING, reason=f"{waiting['reason']}: {message}")
    return ReplicaStatus(name, ReplicaState.PENDING, reason=_unscheduled(pod))


def _failed_step(pod: dict) -> dict | None:
    """The init container (precheck, prepare-data) that ended the pod: its ``terminated``
    state with its name, or None."""
    for status in (pod.get("status") or {}).get("initContainerStatuses") or []:
        ended = (status.get("state") or {}).get("terminated") or {}
        if ended.get("exitCode") not in (None, 0):
            return {**ended, "name": status.get("name", "")}
    return None


def _ended_why(name: str, terminated: dict) -> str:
    code = terminated.get("exitCode")
    if terminated.get("reason") == "OOMKilled":
        return f"{name} ran out of memory (OOMKilled, exit code {code})"
    if code is None:
        return f"{name} failed: {terminated.get('reason') or 'no exit code'}"
    if code > 128:
        return f"{name} was killed by signal {code - 128} (exit code {code})"
    return f"{name} exited with code {code}"


def _unscheduled(pod: dict) -> str:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return condition.get("message") or condition.get("reason") or ""
    return ""


def _podgroup_reason(podgroup: dict | None, queue: str) -> str:
    if not podgroup:
        return ""
    status = podgroup.get("status") or {}
    for condition in reversed(status.get("conditions") or []):
        if condition.get("type") == "Unschedulable" and condition.get("status") == "True":
            return f"the scheduler cannot place it yet: {condition.get('message') or ''}".strip()
    if status.get("phase") == "Pending":
        return f"waiting for room in the Volcano queue {queue}" if queue else ""
    return ""


def lost(job: dict, pods: list[dict]) -> str:
    """Why the cluster, not the job's code, took a pod of it away (seed 003: node NotReady,
    pod force-deleted), in plain English; "" when it did not. A job the console is deleting
    (its stop) loses its pods on purpose: that is never a loss."""
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return ""
    for pod in pods:
        status = pod.get("status") or {}
        for condition in status.get("conditions") or []:
            if condition.get("type") == "DisruptionTarget" and condition.get("status") == "True":
                why = condition.get("message") or condition.get("reason") or "disrupted"
                return f"{task_of(pod)} was taken off its node by the cluster ({why})"
        if status.get("reason") in LOST_REASONS:
            why = status.get("message") or status["reason"]
            return f"{task_of(pod)} was lost with its node ({why})"
    # Volcano keeps the pods that ended on their own (soft retain): a pod gone while none
    # failed by itself was deleted behind the job's back, by a person or a controller.
    ended_alone = [
        p
        for p in pods
        if (p.get("status") or {}).get("phase") == "Failed"
        and not (p.get("metadata") or {}).get("deletionTimestamp")
    ]
    wanted = sum(task.get("replicas", 1) for task in (job.get("spec") or {}).get("tasks") or [])
    phase = ((job.get("status") or {}).get("state") or {}).get("phase")
    # Only once Volcano has reacted to the missing pod (its policies abort or restart the
    # job): while it still says Running, a pod not listed may just not be listed yet (the
    # pods and the job are read apart).
    reacted = phase not in (None, "Pending", "Running")
    if reacted and not ended_alone and len(pods) < wanted:
        gone = wanted - len(pods)
        return f"{gone} of its pods were deleted outside the console (force-deleted, or lost)"
    return ""


def workload_status(job: dict, pods: list[dict], podgroup: dict | None = None) -> WorkloadStatus:
    """The state of one workload now."""
    spec = job.get("spec") or {}
    volcano = ((job.get("status") or {}).get("state") or {}).get("phase") or "Pending"
    replicas = tuple(sorted((replica_status(p) for p in pods), key=lambda r: r.name))
    by_name = {r.name: r for r in replicas}
    failed = [r for r in replicas if r.state == ReplicaState.FAILED]
    deleting = bool((job.get("metadata") or {}).get("deletionTimestamp"))
    if volcano in ("Completed",):
        return WorkloadStatus(WorkloadState.SUCCEEDED, replicas)
    why = lost(job, pods)
    if why:
        # Ended for the console even while Volcano still aborts it: a pod on a node that
        # stopped answering may stay Terminating for as long as the node is gone.
        return WorkloadStatus(WorkloadState.FAILED, replicas, why, node_lost=True)
    if volcano in ("Aborted", "Failed") or (volcano == "Aborting" and failed):
        reason = failed[0].reason if failed else _volcano_why(job, "the cluster aborted it")
        return WorkloadStatus(WorkloadState.FAILED, replicas, reason)
    if volcano == "Terminated" or (deleting and not pods):
        return WorkloadStatus(WorkloadState.STOPPED, replicas, _volcano_why(job, "terminated"))
    if failed:  # a pod failed and Volcano has not moved the job yet
        return WorkloadStatus(WorkloadState.FAILED, replicas, failed[0].reason)
    hopeless = [r for r in replicas if r.reason.split(":")[0] in HOPELESS]
    if hopeless:
        return WorkloadStatus(
            WorkloadState.FAILED, replicas, f"{hopeless[0].name}: {hopeless[0].reason}"
        )
    if volcano in ("Running", "Completing", "Restarting", "Terminating", "Aborting") or deleting:
        running = sum(r.state == ReplicaState.RUNNING for r in replicas)
        wanted = len(spec.get("tasks") or []) or len(replicas)
        state = WorkloadState.RUNNING if running >= wanted else WorkloadState.STARTING
        if volcano == "Running" and running >= (spec.get("minAvailable") or wanted):
            state = WorkloadState.RUNNING
        return WorkloadStatus(state, replicas, "stopping" if deleting else "")
    # Pending or Inqueue: why it does not start, in the cluster's own words.
    reason = next((r.reason for r in replicas if r.reason), "")
    reason = reason or _podgroup_reason(podgroup, spec.get("queue", ""))
    started = any(by_name[name].state == ReplicaState.RUNNING for name in by_name)
    return WorkloadStatus(
        WorkloadState.STARTING if started else WorkloadState.PENDING, replicas, reason
    )


def _volcano_why(job: dict, default: str) -> str:
    state = (job.get("status") or {}).get("state") or {}
    return state.get("message") or state.get("reason") or default
