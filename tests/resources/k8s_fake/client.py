"""What the fake's own tests share: a fake of one GPU node moved on by hand, and requests to
it as any client sends them."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from tests.resources.k8s_fake import FakeKubernetes, node
from tests.resources.k8s_fake.seed import volcano_job

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/ml/jobs"
PODS = "/api/v1/namespaces/ml/pods"
CONFIGMAPS = "/api/v1/namespaces/ml/configmaps"
NODES = [node("gpu-01", cpu="8", memory="32Gi", extended={"nvidia.com/gpu": "2"})]


def one_node_fake():
    """The fake with NODES, moved on by hand: no background thread, each test calls tick()."""
    return FakeKubernetes(NODES, auto=False)


def call(api, method: str, path: str, body=None, token: str | None = None):
    """(HTTP code, JSON body or text), as any client would see them."""
    request = urllib.request.Request(
        api.url + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {token or api.token}",
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            code, raw, kind = response.status, response.read(), response.headers["Content-Type"]
    except urllib.error.HTTPError as error:
        code, raw, kind = error.code, error.read(), error.headers["Content-Type"]
    return code, json.loads(raw) if kind == "application/json" else raw.decode()


def ticks(api, count: int = 8) -> None:
    for _ in range(count):
        api.tick()


def running(api, name: str, **job) -> dict:
    assert call(api, "POST", JOBS, volcano_job(name, **job))[0] == 201
    ticks(api)
    time.sleep(0.25)  # ContainerCreating passes
    ticks(api, 3)
    return api.get_job("ml", name)
