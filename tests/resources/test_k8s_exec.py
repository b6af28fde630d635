"""SPEC J20 on Kubernetes: the debug terminal enters a replica's container through the API's
``pods/exec`` WebSocket (the fake API server speaks its v4 channel protocol and runs the
"container" as a real shell on a PTY in the pod's folder)."""

from __future__ import annotations

import os
import re
import time

import pytest

from resources.backends.base import ShellUnavailable
from resources.backends.kubernetes.api import Connection
from resources.backends.kubernetes.backend import KubernetesBackend
from resources.backends.kubernetes.render import ClusterTarget
from tests.resources.k8s_fake import HAVE_CRDS, FakeKubernetes, node
from tests.resources.k8s_fake.client import running

pytestmark = pytest.mark.skipif(
    not HAVE_CRDS, reason="Volcano's CRDs are not beside the checkout (shared/k8s/crds)"
)


@pytest.fixture
def api():
    with FakeKubernetes([node("gpu-01", cpu="8", memory="32Gi")], auto=False) as fake:
        yield fake


def backend_of(api, token=None) -> KubernetesBackend:
    connection = Connection("token", server=api.url, token=token or api.token)
    return KubernetesBackend(connection, ClusterTarget(namespace="ml"))


PROMPT = r"[#$] "


def read_until(fd: int, pattern: str, timeout: float = 15) -> str:
    """What the terminal shows until ``pattern`` (a regex) appears in it."""
    seen, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            seen += os.read(fd, 65536)
        except BlockingIOError:
            time.sleep(0.02)
        except OSError:  # EIO: the terminal's program has ended
            break
        if re.search(pattern, seen.decode(errors="replace")):
            return seen.decode(errors="replace")
    raise AssertionError(f"{pattern!r} not shown within {timeout}s: {seen!r}")


def test_a_shell_in_the_replicas_container_runs_commands_and_follows_the_window(api):
    running(api, "train-7")
    shell = backend_of(api).open_shell("train-7", "worker-0", 24, 80)
    try:
        read_until(shell.fd, PROMPT)  # keys typed before the shell reads them may be dropped
        os.write(shell.fd, b"echo $((6*7)); pwd; stty size\n")
        shown = read_until(shell.fd, r"[\r\n]24 80\r?\n")
        assert "42" in shown
        pod = api.objects("ml", "pods")[0]["metadata"]["name"]
        assert str(api.workdirs / pod) in shown  # the pod's own working folder
        shell.resize(40, 120)  # the page's window grows: the container's terminal too
        time.sleep(0.8)
        os.write(shell.fd, b"stty size\n")
        read_until(shell.fd, r"[\r\n]40 120\r?\n")
        os.write(shell.fd, b"exit 3\n")
        read_until(shell.fd, r"exit 3")
        _, status = wait_for_exit(shell.pid)
        assert os.waitstatus_to_exitcode(status) == 3  # the shell's own exit status
    finally:
        shell.end()
    exec_calls = [p for p in api.requests if "/exec?" in p]
    assert (
        len(exec_calls) == 1 and "tty=true" in exec_calls[0] and "container=main" in exec_calls[0]
    )


def wait_for_exit(pid: int, timeout: float = 10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return done, status
        time.sleep(0.05)
    raise AssertionError(f"the terminal's program {pid} did not end")


def test_no_shell_into_a_pod_that_does_not_run(api):
    backend = backend_of(api)
    with pytest.raises(ShellUnavailable, match="the pod of worker-0 is gone from the cluster"):
        backend.open_shell("nothing-here", "worker-0", 24, 80)


def test_a_refusal_of_the_api_server_is_said_in_the_terminal(api):
    running(api, "train-8")
    api.forbidden = {("create", "", "pods/exec")}
    shell = backend_of(api).open_shell("train-8", "worker-0", 24, 80)
    try:
        shown = read_until(shell.fd, r"403\)")
        assert (
            "console: no shell in train-8-worker-0-0: the console's account may not open a "
            "shell in pods (create pods/exec: 403)"
        ) in shown
    finally:
        shell.end()
