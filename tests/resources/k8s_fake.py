"""A tiny Kubernetes API server for tests: real HTTP on 127.0.0.1, real API shapes.

It answers ``GET /version`` and ``GET /api/v1/nodes`` (with ``limit``/``continue`` paging, as
the real API server does) to callers holding its bearer token, and 401 to anyone else. The
Node objects are built by :func:`node`, shaped like what a kubelet reports.
"""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "test-token-0123456789"


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


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}  # fmt: skip


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


class FakeKubernetes:
    """``with FakeKubernetes(nodes) as api:`` serves until the block ends (or ``stop()``)."""

    def __init__(self, nodes: list[dict[str, Any]], token: str = TOKEN) -> None:
        self.nodes = nodes
        self.token = token
        self.requests: list[str] = []  # paths asked, to check paging and headers
        self.html: str | None = None  # when set, answers this page instead (a confused proxy)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.requests.append(self.path)
                if self.headers.get("Authorization") != f"Bearer {fake.token}":
                    self._send(401, _status(401, "Unauthorized", "Unauthorized"))
                    return
                url = urlsplit(self.path)
                if fake.html is not None:
                    self._send(200, fake.html, "text/html")
                elif url.path.rstrip("/") == "/version":  # the client asks for /version/
                    self._send(200, fake.version())
                elif url.path == "/api/v1/nodes":
                    query = {key: values[0] for key, values in parse_qs(url.query).items()}
                    self._send(200, node_list(fake.nodes, query))
                else:
                    self._send(404, _status(404, "NotFound", "the server could not find it"))

            def _send(self, code: int, body: dict | str, kind: str = "application/json") -> None:
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass  # keep test output clean

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        # A short poll interval makes stop() quick; the default (0.5 s) slows every test.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @staticmethod
    def version() -> dict[str, str]:
        return {"major": "1", "minor": "31", "gitVersion": "v1.31.2",
                "gitCommit": "5864a4677267e6adeae276ad85882a8714d69d9d",
                "gitTreeState": "clean", "buildDate": "2024-10-22T20:28:14Z",
                "goVersion": "go1.22.8", "compiler": "gc", "platform": "linux/amd64"}  # fmt: skip

    def kubeconfig(self, path: Path, token: str | None = None, scheme: str = "http") -> Path:
        """Write a kubeconfig for this server (JSON is valid YAML) and return its path."""
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {"name": "fake", "cluster": {"server": f"{scheme}://127.0.0.1:{self.port}"}}
                    ],
                    "users": [{"name": "tester", "user": {"token": token or self.token}}],
                    "contexts": [
                        {"name": "fake", "context": {"cluster": "fake", "user": "tester"}}
                    ],
                    "current-context": "fake",
                }
            )
        )
        return path

    def start(self) -> FakeKubernetes:
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.thread.is_alive():
            self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeKubernetes:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
