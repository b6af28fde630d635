"""The Kubernetes backend: one cluster's Nodes as inventory, and workloads as Volcano Jobs.

The console's own admission decides what starts and where (nodeSelector); Volcano gangs the
pods. What each call costs the API server:

* ``submit``: create the Job, then the ConfigMap of its files (owned by the Job, so that
  deleting the Job deletes it). Idempotent: a Job of ours already under that name is a
  success, so a retried submit never makes two objects for one attempt.
* ``poll``/``usage``: answered from one snapshot of every workload of the console in the
  namespace, three LISTs by label (Jobs, Pods, PodGroups) and one of pod metrics, at most
  once per ``SNAPSHOT_SECONDS`` whatever the number of jobs.
* ``logs``: the console's own copy (logs.py), refreshed from ``pods/log`` while a pod lives.
* ``stop``: delete the Job with the graceful time (the pods get SIGTERM, then SIGKILL);
  ``cleanup``: delete it at once, and forget its logs.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from resources.backends.base import (
    BackendError,
    NodeInfo,
    RecoveredWorkload,
    ShellUnavailable,
    UnknownWorkload,
    UsageSample,
    Workload,
    WorkloadStatus,
)
from resources.backends.kubernetes import cordon as k8s_cordon
from resources.backends.kubernetes import precheck as k8s_precheck
from resources.backends.kubernetes import queues as k8s_queues
from resources.backends.kubernetes import render as k8s_render
from resources.backends.kubernetes.api import (
    TIMEOUT_SECONDS,
    Api,
    ApiAnswer,
    ApiRefused,
    ApiUnavailable,
    Connection,
)
from resources.backends.kubernetes.crds import served_schema
from resources.backends.kubernetes.logs import LogStore, copy_pod_logs
from resources.backends.kubernetes.nodes import PAGE_SIZE, node_info, parse_quantity
from resources.backends.kubernetes.render import WORKLOAD_LABEL, ClusterTarget
from resources.backends.kubernetes.status import task_of, workload_status
from resources.backends.kubernetes.usage import Meter
from resources.backends.kubernetes.validity import RenderError, check

__all__ = ["KubernetesBackend", "node_info", "parse_quantity"]

logger = logging.getLogger(__name__)

VOLCANO = "/apis/batch.volcano.sh/v1alpha1"
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1"
JOB_CRD = "jobs.batch.volcano.sh"
# A poll reuses the last snapshot this long: the beat's sync and a launch's first seconds of
# following then cost one set of LISTs, not one per job.
SNAPSHOT_SECONDS = 1.0


@dataclass
class Snapshot:
    at: float = 0.0
    jobs: dict[str, dict] = field(default_factory=dict)
    pods: dict[str, list[dict]] = field(default_factory=dict)
    podgroups: dict[str, dict] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)  # path -> last resourceVersion


class KubernetesBackend:
    name = "kubernetes"
    # Seed 004's prechecks run in each pod (k8s_precheck): the console does not run them
    # before the submit, it reads them back from the pods.
    prechecks_in_workload = True

    def __init__(
        self,
        connection: Connection,
        target: ClusterTarget | None = None,
        *,
        logs_dir: Path | None = None,
        prometheus: str = "",
        timeout: float = TIMEOUT_SECONDS,
    ) -> None:
        self.api = Api(connection, timeout)
        self.target = target or ClusterTarget(namespace="default")
        self.store = LogStore(logs_dir) if logs_dir else None
        self.prometheus = prometheus.rstrip("/")
        self._snapshot = Snapshot()
        self.meter = Meter(self.api, self.target.namespace, self.prometheus)
        self._schema: dict | None = None
        self._lock = threading.Lock()

    @property
    def timeout(self) -> float:
        return self.api.timeout

    @property
    def _ns(self) -> str:
        return f"/namespaces/{self.target.namespace}"

    # --- nodes ------------------------------------------------------------------------------

    def inventory(self) -> list[NodeInfo]:
        nodes: list[NodeInfo] = []
        token = None
        while True:
            page = self.api.get(
                "/api/v1/nodes", "list nodes", limit=PAGE_SIZE, **{"continue": token}
            )
            if page.get("kind") != "NodeList":
                raise BackendError("the API did not answer with a NodeList")
            for item in page.get("items") or []:
                info = node_info(item)
                if info is not None:
                    nodes.append(info)
                else:
                    name = (item.get("metadata") or {}).get("name")
                    logger.info("skipping node %s: no allocatable CPU or memory", name)
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return nodes

    def cordon(self, name: str, reason: str, by: str) -> None:
        """Cordon ``name`` for the console's isolation, saying why (k8s_cordon)."""
        self._patch_node(name, "cordon", k8s_cordon.cordon_body(reason, by))

    def uncordon(self, name: str) -> None:
        """Undo the console's own cordon of ``name``: the caller saw its annotation."""
        self._patch_node(name, "uncordon", k8s_cordon.UNCORDON_BODY)

    def _patch_node(self, name: str, verb: str, body: dict) -> None:
        self.api.request("PATCH", k8s_cordon.path(name), f"{verb} node {name}", body=body,
                         content_type=k8s_cordon.MERGE_PATCH)  # fmt: skip

    def health(self) -> str:
        from resources.backends.kubernetes.check import health

        return health(self)

    def check(self):
        """The connection test (k8s_check)."""
        from resources.backends.kubernetes.check import check

        return check(self)

    # --- submit -----------------------------------------------------------------------------

    def render(self, workload: Workload) -> tuple[dict, dict]:
        """The Job and its ConfigMap, checked against the schemas (RenderError if not)."""
        try:
            job = k8s_render.volcano_job(workload, self.target)
            files = k8s_render.config_map(workload, self.target, owner_uid="pending")
        except ValueError as error:
            raise RenderError(str(error)) from None
        check(job, files, self._job_schema())
        return job, files

    def _job_schema(self) -> dict | None:
        """The Job CRD's schema as this cluster serves it (fetched once)."""
        if self._schema is None:
            self._schema = served_schema(self.api, JOB_CRD, "v1alpha1") or {}
        return self._schema or None

    def sync_queues(self, wanted: list[dict]) -> k8s_queues.QueueSync:
        """Make the cluster's console queues exactly ``wanted`` (resources.queue_mirror);
        RenderError, and nothing sent, when one does not fit the cluster's Queue schema."""
        found = k8s_queues.check(wanted, served_schema(self.api, k8s_queues.CRD, "v1beta1"))
        if found:
            raise RenderError("; ".join(found))
        return k8s_queues.sync(self.api, wanted)

    def submit(self, workload: Workload) -> None:
        job, files = self.render(workload)
        path = f"{VOLCANO}{self._ns}/jobs"
        try:
            created = self.api.request("POST", path, "create Volcano jobs", body=job)
        except ApiAnswer as error:
            if error.status == 404:
                raise BackendError(
                    "Volcano is not installed on the cluster (no jobs.batch.volcano.sh)"
                ) from None
            if error.reason != "AlreadyExists":
                raise
            created = self.api.get(f"{path}/{workload.id}", "read Volcano jobs")
            labels = (created.get("metadata") or {}).get("labels") or {}
            if labels.get(WORKLOAD_LABEL) != workload.id or any(
                labels.get(key) != value for key, value in workload.labels.items()
            ):
                raise ValueError(
                    f"another object named {workload.id} exists on the cluster"
                ) from None
        uid = (created.get("metadata") or {}).get("uid", "")  # type: ignore[union-attr]
        files["metadata"]["ownerReferences"][0]["uid"] = uid
        if files["data"]:
            try:
                self.api.request(
                    "POST", f"/api/v1{self._ns}/configmaps", "create config maps", body=files
                )
            except ApiAnswer as error:
                if error.reason != "AlreadyExists":
                    raise

    # --- follow -----------------------------------------------------------------------------

    def _list(self, path: str, what: str) -> list[dict]:
        """Every object of ours at ``path``; resourceVersion-aware (the API server may answer
        from its cache), starting over when that version has been compacted away."""
        query = {"labelSelector": WORKLOAD_LABEL}
        version = self._snapshot.versions.get(path)
        if version:
            query |= {"resourceVersion": version, "resourceVersionMatch": "NotOlderThan"}
        try:
            answer = self.api.get(path, what, **query)
        except ApiAnswer as error:
            if error.status != 410 or not version:
                raise
            self._snapshot.versions.pop(path, None)
            answer = self.api.get(path, what, labelSelector=WORKLOAD_LABEL)
        fresh = (answer.get("metadata") or {}).get("resourceVersion")
        if fresh:
            self._snapshot.versions[path] = fresh
        return list(answer.get("items") or [])

    def refresh(self) -> Snapshot:
        """Read every workload of ours once (three calls), whatever their number."""
        with self._lock:
            jobs = self._list(f"{VOLCANO}{self._ns}/jobs", "list Volcano jobs")
            pods = self._list(f"/api/v1{self._ns}/pods", "list pods")
            try:
                groups = self._list(f"{PODGROUPS}{self._ns}/podgroups", "list pod groups")
            except ApiRefused:
                groups = []  # the queue reason is a nicety; jobs run without it
            snapshot = Snapshot(time.monotonic(), versions=self._snapshot.versions)
            for item in jobs:
                snapshot.jobs[_workload_of(item)] = item
            for item in pods:
                snapshot.pods.setdefault(_workload_of(item), []).append(item)
            for item in groups:
                snapshot.podgroups[_workload_of(item)] = item
            self._snapshot = snapshot
            return snapshot

    def _fresh(self) -> Snapshot:
        if time.monotonic() - self._snapshot.at > SNAPSHOT_SECONDS:
            return self.refresh()
        return self._snapshot

    def poll(self, workload_id: str) -> WorkloadStatus:
        snapshot = self._fresh()
        job = snapshot.jobs.get(workload_id)
        if job is None:
            # Submitted after the snapshot, or gone: ask for it alone.
            try:
                job = self.api.get(f"{VOLCANO}{self._ns}/jobs/{workload_id}", "read Volcano jobs")
            except ApiAnswer as error:
                if error.status == 404:
                    raise UnknownWorkload(
                        "its Volcano job is gone from the cluster (deleted outside the console)"
                    ) from None
                raise
            # Its pods too: a short job may live its whole life between two snapshots, and
            # its pods say how it went (its prechecks, its logs): kept until the next one.
            selector = f"{WORKLOAD_LABEL}={workload_id}"
            pods = self.api.get(f"/api/v1{self._ns}/pods", "list pods", labelSelector=selector)
            pods = list(pods.get("items") or [])
            snapshot.jobs[workload_id], snapshot.pods[workload_id] = job, pods
            status = workload_status(job, pods)
        else:
            pods = snapshot.pods.get(workload_id, [])
            status = workload_status(job, pods, snapshot.podgroups.get(workload_id))
        status = replace(status, prechecks=k8s_precheck.results(pods, task_of))
        if self.store is not None and (status.state.finished or _deleting(job)):
            self.copy_logs(workload_id, final=status.state.finished)
        return status

    def usage(self, workload_id: str) -> list[UsageSample]:
        return self.meter.samples(self._fresh().pods.get(workload_id, []))

    # --- logs -------------------------------------------------------------------------------

    def _copy_logs(self, workload_id: str, replicas: list[str], final: bool = False) -> None:
        assert self.store is not None
        copy_pod_logs(self.api, self.store, self.target.namespace, workload_id, replicas, final)

    def copy_logs(self, workload_id: str, final: bool = False) -> None:
        """Copy the logs of a workload's pods (as the last snapshot saw them)."""
        if self.store is not None:
            pods = self._snapshot.pods.get(workload_id, [])
            started = [
                task_of(p) for p in pods if (p.get("status") or {}).get("phase") != "Pending"
            ]
            self._copy_logs(workload_id, started, final)

    def logs(
        self, workload_id: str, replica: str, offset: int = 0, limit: int = 65536
    ) -> tuple[str, int]:
        store = self._store()
        self._copy_logs(workload_id, [replica])  # someone reads it: bring it up to date
        return store.read(workload_id, replica, offset, limit)

    def log_size(self, workload_id: str, replica: str) -> int:
        store = self._store()
        self._copy_logs(workload_id, [replica])
        return store.size(workload_id, replica)

    def path_names(self, workload_id: str, replica: str) -> dict[str, str]:
        return {}  # a pod sees the job's own paths: nothing to translate

    def host_path(self, workload_id: str, replica: str, path: str) -> None:
        return None  # a pod's files are on its node, not here

    def _store(self) -> LogStore:
        if self.store is None:
            raise BackendError("this cluster keeps no logs (no log folder configured)")
        return self.store

    # --- end --------------------------------------------------------------------------------

    def stop(self, workload_id: str, graceful_seconds: int) -> None:
        if self.store is not None:
            with contextlib.suppress(BackendError):
                self.copy_logs(workload_id)
        self._delete(workload_id, graceful_seconds, "Foreground")

    def _delete(self, workload_id: str, grace: int, propagation: str) -> None:
        try:
            self.api.request(
                "DELETE",
                f"{VOLCANO}{self._ns}/jobs/{workload_id}",
                "delete Volcano jobs",
                body={
                    "apiVersion": "v1",
                    "kind": "DeleteOptions",
                    "gracePeriodSeconds": grace,
                    "propagationPolicy": propagation,
                },
            )
        except ApiAnswer as error:
            if error.status != 404:
                raise
        self._snapshot.at = 0.0  # the next poll sees the deletion

    def cleanup(self, workload_id: str) -> None:
        self._delete(workload_id, 0, "Background")
        try:
            self.api.request(
                "DELETE",
                f"/api/v1{self._ns}/configmaps/{k8s_render.files_name_of(workload_id)}",
                "delete config maps",
            )
        except ApiAnswer as error:
            if error.status != 404:
                raise
        if self.store is not None:
            self.store.forget(workload_id)

    def open_shell(self, workload_id: str, replica: str, rows: int, cols: int):
        """A shell in the replica's container through the API's ``pods/exec`` (k8s_exec)."""
        from resources.backends.kubernetes import exec as k8s_exec

        pods = [p for p in self._fresh().pods.get(workload_id, []) if task_of(p) == replica]
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        if not running:
            why = "is not running" if pods else "is gone from the cluster"
            raise ShellUnavailable(f"the pod of {replica} {why}")
        pod = running[0]
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        return k8s_exec.open_shell(
            self.api.connection, self.target.namespace, pod["metadata"]["name"],
            containers[0].get("name", ""), rows, cols,
        )  # fmt: skip

    def discard_kept(self, workload_id: str) -> bool:
        return False  # the pods are removed with the job (cleanup); nothing is kept apart

    def recover(self) -> list[RecoveredWorkload]:
        return []  # the cluster keeps running what it runs: nothing is orphaned by a worker


def _workload_of(item: dict) -> str:
    return ((item.get("metadata") or {}).get("labels") or {}).get(WORKLOAD_LABEL, "")


def _deleting(item: dict) -> bool:
    return bool((item.get("metadata") or {}).get("deletionTimestamp"))


__all__ += ["ApiUnavailable", "Connection", "RenderError"]
