"""The fake API server itself: real HTTP on 127.0.0.1, the real paths and answers.

Every request is recorded; then, in this order: a confused proxy's HTML page (``html``), a
server that is down (``down``: 503 at once, which the client reads as "no answer") or a
scripted failure (``fail_next``), the bearer token (401), the verbs our account lacks
(``forbidden``: 403), and the resource itself. Bodies are checked strictly: the Volcano
Job against its CRD's schema and every pod template against the Kubernetes OpenAPI (the
console's own checks, reused), the ConfigMap against the OpenAPI.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.resources.k8s_fake import exec as exec_socket
from tests.resources.k8s_fake import handlers
from tests.resources.k8s_fake.controller import ENDED, Controller
from tests.resources.k8s_fake.objects import TOKEN, USER, stamp, status
from tests.resources.k8s_fake.script import Script
from tests.resources.k8s_fake.store import Store

TICK_SECONDS = 0.02
# What the API server says with each failure a test may script (metav1.StatusReason).
FAILURES = {
    429: (
        "TooManyRequests",
        "the server has received too many requests and has asked us to try again later",
    ),
    500: ("InternalError", "an error on the server has prevented the request from succeeding"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: (
        "Timeout",
        "the server was unable to return a response in the time allotted, but "
        "may still be processing the request",
    ),
}


class Request:
    """One request, parsed: who may do what (``verb``, ``group``, ``resource``) where."""

    def __init__(self, method: str, raw_path: str, body: bytes) -> None:
        url = urlsplit(raw_path)
        self.method = method
        self.path = url.path.rstrip("/") or "/"
        self.query = {key: values[0] for key, values in parse_qs(url.query).items()}
        self.body = body
        self.content_type = ""
        self.group = self.version = self.resource = self.namespace = self.name = ""
        self.subresource = ""
        parts = [p for p in self.path.split("/") if p]
        rest: list[str] = []
        if parts[:2] == ["api", "v1"]:
            self.version, rest = "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            self.group, self.version, rest = parts[1], parts[2], parts[3:]
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            self.namespace, rest = rest[1], rest[2:]
        if rest:
            self.resource = rest[0]
            self.name = rest[1] if len(rest) > 1 else ""
            self.subresource = rest[2] if len(rest) > 2 else ""
        self.verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
            method, "get" if self.name else "list"
        )

    def json(self) -> Any:
        return json.loads(self.body or b"null")

    def forbidden_message(self) -> str:
        resource = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        what = f"{self.resource}.{self.group}" if self.group else self.resource
        named = f' "{self.name}"' if self.name and self.verb != "create" else ""
        where = f'in the namespace "{self.namespace}"' if self.namespace else "at the cluster scope"
        return (
            f'{what}{named} is forbidden: User "{USER}" '
            f'cannot {self.verb} resource "{resource}" in API group "{self.group}" {where}'
        )


class FakeKubernetes:
    """``with FakeKubernetes(nodes) as api:`` serves until the block ends (or ``stop()``);
    with ``auto`` a background thread plays Volcano, the scheduler and the kubelets."""

    def __init__(
        self, nodes: list[dict[str, Any]], token: str = TOKEN, *, auto: bool = True, port: int = 0
    ) -> None:
        # Its own copy: a test may take a node down (node_not_ready) without the next
        # test's fake, made from the same list, seeing it.
        self.nodes = nodes = copy.deepcopy(nodes)
        self.token = token
        self.auto = auto
        self.calls: list[tuple[str, str]] = []  # (method, path with its query), in order
        self.html: str | None = None  # when set, answers this page instead (a confused proxy)
        self.down = False
        self.volcano = True
        self.metrics = True
        self.forbidden: set[tuple[str, str, str]] = set()
        self.store = Store()
        self.controller = Controller(self.store, nodes)
        self._failures: list[int] = []
        self._stopping = threading.Event()
        # Each pod's working folder, for the shells pods/exec runs "in" it.
        self.workdirs = Path(tempfile.mkdtemp(prefix="fake-pods-"))
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                if self.headers.get("Upgrade", "").lower() == "websocket":
                    fake.exec(self)
                    self.close_connection = True
                    return
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size) if size else b""
                code, answer = fake.answer(
                    self.command, self.path, body, self.headers.get("Authorization"),
                    self.headers.get("Content-Type", ""),
                )  # fmt: skip
                if isinstance(answer, str):
                    kind = "text/html" if answer.startswith("<") else "text/plain"
                    data = answer.encode()
                else:
                    kind, data = "application/json", json.dumps(answer).encode()
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any

            def log_message(self, *args: Any) -> None:
                pass  # keep test output clean

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        # A short poll interval makes stop() quick; the default (0.5 s) slows every test.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.ticker = threading.Thread(target=self._tick_forever, daemon=True)

    # --- what tests set and read ------------------------------------------------------------

    @property
    def requests(self) -> list[str]:
        """The paths asked (with their query), to check paging and headers."""
        return [path for _method, path in list(self.calls)]

    @property
    def time_scale(self) -> float:
        return self.controller.time_scale

    @time_scale.setter
    def time_scale(self, value: float) -> None:
        self.controller.time_scale = value

    def script(self, name_prefix: str, **behaviour: Any) -> Script:
        """How the pods of Volcano jobs named ``name_prefix...`` behave (see Script)."""
        script = Script(**behaviour)
        with self.store.lock:
            self.controller.scripts.append((name_prefix, script))
        return script

    def get_job(self, namespace: str, name: str) -> dict | None:
        with self.store.lock:
            return copy.deepcopy(self.store.get("jobs", namespace, name))

    def objects(self, namespace: str, kind: str) -> list[dict]:
        with self.store.lock:
            return copy.deepcopy(self.store.of(kind, namespace))

    def count(self, method: str, path_prefix: str) -> int:
        return sum(m == method and p.startswith(path_prefix) for m, p in list(self.calls))

    def reset_calls(self) -> None:
        self.calls.clear()

    def fail_next(self, n: int = 1, code: int = 503) -> None:
        """The next ``n`` requests (whatever they ask) answer ``code``."""
        with self.store.lock:
            self._failures.extend([code] * n)

    def vanish(self, name: str, namespace: str | None = None) -> None:
        """Someone outside deletes a Volcano job and its pods and pod group, at once."""
        with self.store.lock:
            for job in [
                j for j in self.store.of("jobs", namespace) if j["metadata"]["name"] == name
            ]:
                uid = job["metadata"]["uid"]
                for kind, owned in self.store.owned_by(uid):
                    if kind != "configmaps":
                        self.controller.remove(kind, owned)
                self.controller.remove("jobs", job)

    def force_delete_pod(self, name: str, namespace: str | None = None) -> None:
        """``kubectl delete pod --force --grace-period=0`` (seed 003, PodForceDeleted): the
        pod object is gone at once, whatever its container is doing."""
        with self.store.lock:
            for pod in [
                p for p in self.store.of("pods", namespace) if p["metadata"]["name"] == name
            ]:
                for ref in pod["metadata"].get("ownerReferences") or ():
                    self.controller.wake(ref["uid"])
                self.controller.remove("pods", pod)

    def node_condition(self, name: str, kind: str, reason: str, message: str) -> None:
        """A condition a node-problem-detector sets (KernelDeadlock, ReadonlyFilesystem...)
        or the kubelet's own (NetworkUnavailable, DiskPressure...), holding: the node stays
        Ready, its pods run on (SPEC F2: the console must notice it itself)."""
        with self.store.lock:
            for item in self.nodes:
                if item["metadata"]["name"] == name:
                    conditions = item["status"].setdefault("conditions", [])
                    conditions[:] = [c for c in conditions if c["type"] != kind]
                    conditions.append({"type": kind, "status": "True", "reason": reason,
                                       "message": message,
                                       "lastTransitionTime": stamp(time.time())})  # fmt: skip

    def precheck(self, node: str, item: str, ok: bool | None = False, value: str = "") -> None:
        """What the prechecks of the pods on ``node`` find of ``item`` from now on (seed 004's
        keyword: "dns", "disk-size shm", "gpu-check"…): failed, or unmeasured (None), as
        said; True: passed again."""
        with self.store.lock:
            found = self.controller.precheck_results.setdefault(node, {})
            found.pop(item) if ok is True else found.__setitem__(item, (ok, value))

    def node_not_ready(self, name: str) -> None:
        """The node stops answering (seed 003, nodeNotReady): it turns NotReady with the
        unreachable taint, and the taint manager evicts its pods (a DisruptionTarget
        condition, then deletion) — at once, not after the 300 s toleration."""
        now = time.time()
        with self.store.lock:
            for item in self.nodes:
                if item["metadata"]["name"] != name:
                    continue
                ready = [c for c in item["status"].get("conditions") or () if c["type"] == "Ready"]
                for condition in ready:
                    condition |= {"status": "Unknown", "reason": "NodeStatusUnknown",
                                  "message": "Kubelet stopped posting node status."}  # fmt: skip
                item["spec"]["taints"] = [
                    {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}
                ]
            for pod in self.store.of("pods"):
                if pod["spec"].get("nodeName") != name or pod["status"]["phase"] in ENDED:
                    continue
                pod["status"]["conditions"] = [
                    *(pod["status"].get("conditions") or ()),
                    {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                     "lastTransitionTime": stamp(now), "reason": "DeletionByTaintManager",
                     "message": "Taint manager: deleting due to NoExecute taint"},
                ]  # fmt: skip
                self.controller.delete_pod(pod, now)
                # Its kubelet is gone: nobody stops the container, the pod stays Terminating.
                self.controller.lives[pod["metadata"]["uid"]].kill_at = None

    def compact(self) -> None:
        """etcd compacts: every list version older than now answers 410 Expired."""
        with self.store.lock:
            self.store.compact()

    def tick(self) -> None:
        """One step of Volcano, the scheduler and the kubelets (``auto`` does it alone)."""
        with self.store.lock:
            self.controller.tick(time.time())

    def pod_log(self, namespace: str, pod: str) -> list[tuple[float, str]]:
        with self.store.lock:
            obj = self.store.get("pods", namespace, pod)
            life = obj and self.controller.lives.get(obj["metadata"]["uid"])
            return list(life.logs) if life else []

    @staticmethod
    def version() -> dict[str, str]:
        return {
            "major": "1",
            "minor": "31",
            "gitVersion": "v1.31.2",
            "gitCommit": "5864a4677267e6adeae276ad85882a8714d69d9d",
            "gitTreeState": "clean",
            "buildDate": "2024-10-22T20:28:14Z",
            "goVersion": "go1.22.8",
            "compiler": "gc",
            "platform": "linux/amd64",
        }

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

    # --- answering ----------------------------------------------------------------------------

    def answer(self, method: str, raw_path: str, body: bytes, auth: str | None, kind: str = ""):
        self.calls.append((method, raw_path))
        if self.html is not None:
            return 200, self.html
        with self.store.lock:
            failure = self._failures.pop(0) if self._failures else None
        if self.down or failure:
            code = failure or 503
            reason, message = FAILURES.get(code, FAILURES[500])
            return code, status(code, reason, message)
        if auth != f"Bearer {self.token}":
            return 401, status(401, "Unauthorized", "Unauthorized")
        request = Request(method, raw_path, body)
        request.content_type = kind.split(";")[0].strip()
        if request.path == "/version":  # the client asks for /version/
            return 200, self.version()
        resource = (
            f"{request.resource}/{request.subresource}" if request.subresource else request.resource
        )
        if (request.verb, request.group, resource) in self.forbidden:
            details = {"group": request.group, "kind": request.resource}
            if request.name:
                details["name"] = request.name
            return 403, status(403, "Forbidden", request.forbidden_message(), details)
        try:
            with self.store.lock:
                return handlers.handle(self, request)
        except ValueError as error:  # a body that is not JSON
            return 400, status(400, "BadRequest", f"the body of the request was invalid: {error}")

    def exec(self, handler) -> None:
        """``pods/exec`` over a WebSocket (k8s_fake.exec): the same checks as any request,
        then a shell on a PTY in the pod's own folder for as long as the client stays."""
        self.calls.append(("GET", handler.path))
        request = Request("GET", handler.path, b"")
        if handler.headers.get("Authorization") != f"Bearer {self.token}":
            handler.send_error(401)
            return
        if ("create", "", "pods/exec") in self.forbidden:
            handler.send_error(403)
            return
        if (request.resource, request.subresource) != ("pods", "exec"):
            handler.send_error(404)
            return
        with self.store.lock:
            pod = copy.deepcopy(self.store.get("pods", request.namespace, request.name))
        if pod is None or pod["status"]["phase"] != "Running":
            handler.send_error(404 if pod is None else 400)
            return
        if exec_socket.handshake(handler, handler.headers.get("Sec-WebSocket-Protocol", "")):
            workdir = self.workdirs / pod["metadata"]["name"]
            workdir.mkdir(exist_ok=True)
            exec_socket.serve(handler, pod, workdir)

    # --- running ------------------------------------------------------------------------------

    def _tick_forever(self) -> None:
        while not self._stopping.wait(TICK_SECONDS):
            self.tick()

    def start(self) -> FakeKubernetes:
        self.thread.start()
        if self.auto:
            self.ticker.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self.thread.is_alive():
            self.server.shutdown()
        self.server.server_close()
        if self.ticker.is_alive():
            self.ticker.join(1)
        shutil.rmtree(self.workdirs, ignore_errors=True)

    def __enter__(self) -> FakeKubernetes:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
