"""The debug terminal's shell in a Kubernetes replica (SPEC J20): the API's ``pods/exec``.

:func:`open_shell` starts ``python -m resources.backends.kubernetes.exec`` on a new terminal (a PTY
whose master the caller keeps), as the local backend starts its shell program, so the
terminal's WebSocket treats both alike. That program reads what to enter from a pipe (the
cluster's connection, credentials included, never on its command line or in its
environment), opens the exec WebSocket into the pod's container with a TTY, and relays: its
terminal's keys to the container's stdin (channel 0), the container's output (channels 1
and 2) to its terminal, each size change of its terminal (SIGWINCH) as a resize (channel 4).
The shell runs in the container as the job's processes do: same user, environment and
working directory (the image's, which the job's command starts in too). When the shell
ends the program exits with its status (channel 3); when the page leaves, the caller kills
the program and the API server ends the shell with the connection.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import signal
import struct
import sys
import termios
import tty
from urllib.parse import quote

from resources.backends.base import Shell
from resources.backends.terminal import die_with_parent, start_on_terminal

# bash where the image has it (the shell users expect), else the POSIX shell.
COMMAND = ["/bin/sh", "-c", "command -v bash >/dev/null 2>&1 && exec bash -i || exec sh -i"]
STDIN, STDOUT, STDERR, STATUS, RESIZE = 0, 1, 2, 3, 4
READ_SIZE = 65536


def open_shell(connection, namespace: str, pod: str, container: str, rows: int, cols: int):
    """A Shell whose process relays a terminal to ``pod``'s ``container``."""
    from dataclasses import asdict

    what = json.dumps(
        {"connection": asdict(connection), "namespace": namespace, "pod": pod,
         "container": container}
    )  # fmt: skip
    reader, writer = os.pipe()
    try:
        pid, master = start_on_terminal(
            ["resources.backends.kubernetes.exec", str(reader)], rows, cols, pass_fds=(reader,)
        )
    finally:
        os.close(reader)
    with os.fdopen(writer, "w") as pipe:
        pipe.write(what)
    return Shell(pid=pid, fd=master)


def exec_url(host: str, namespace: str, pod: str, container: str) -> str:
    from kubernetes.stream.ws_client import get_websocket_url

    query = [("command", COMMAND), ("container", container), ("stdin", "true"),
             ("stdout", "true"), ("stderr", "true"), ("tty", "true")]  # fmt: skip
    path = f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod)}/exec"
    return get_websocket_url(f"{host.rstrip('/')}{path}", query)


def _size() -> bytes:
    rows, cols, _x, _y = struct.unpack("HHHH", fcntl.ioctl(0, termios.TIOCGWINSZ, b"\0" * 8))
    return json.dumps({"Width": cols, "Height": rows}).encode()


def _exit_code(status: bytes) -> int:
    """The shell's exit status from channel 3's metav1.Status (0 on Success)."""
    try:
        answer = json.loads(status or b"{}")
    except ValueError:
        return 1
    if answer.get("status") == "Success":
        return 0
    for cause in (answer.get("details") or {}).get("causes") or ():
        if cause.get("reason") == "ExitCode":
            with contextlib.suppress(ValueError):
                return int(cause.get("message", 1))
    return 1


REFUSALS = {
    401: "the API refused the console's credentials (401)",
    403: "the console's account may not open a shell in pods (create pods/exec: 403)",
    404: "the pod is gone (404)",
    400: "the pod's container is not running (400)",
}


def _why(error: Exception) -> str:
    status = getattr(error, "status_code", None)  # the API server's answer to the upgrade
    if status is not None:
        return REFUSALS.get(status, f"the API server answered {status}")
    return str(error) or type(error).__name__


def main(pipe_fd: int) -> int:
    from kubernetes.stream.ws_client import WSClient

    from resources.backends.kubernetes.api import Connection, _configuration

    with os.fdopen(pipe_fd) as pipe:
        what = json.loads(pipe.read())
    die_with_parent()
    try:
        configuration = _configuration(Connection(**what["connection"]))
        url = exec_url(configuration.host, what["namespace"], what["pod"], what["container"])
        key = configuration.get_api_key_with_prefix("authorization")
        headers = {"authorization": key} if key else {}
        client = WSClient(configuration, url, headers, capture_all=False, binary=True)
    except Exception as error:  # whatever it is, the person at the terminal reads why
        os.write(1, f"console: no shell in {what['pod']}: {_why(error)}\r\n".encode())
        return 1
    # Its terminal becomes its controlling one, so a size change signals it (SIGWINCH).
    with contextlib.suppress(OSError):
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    tty.setraw(0)  # the container's terminal echoes and edits lines; this one passes keys
    resized = [True]
    signal.signal(signal.SIGWINCH, lambda *_: resized.__setitem__(0, True))
    status = b""
    while client.is_open():
        if resized[0]:
            resized[0] = False
            client.write_channel(RESIZE, _size())
        with contextlib.suppress(InterruptedError):
            ready, _, _ = select.select([0, client.sock.sock], [], [], 0.5)
            if 0 in ready:
                keys = os.read(0, READ_SIZE)
                if not keys:
                    break
                client.write_channel(STDIN, keys)
        client.update(timeout=0)
        for channel in (STDOUT, STDERR):
            if data := client.read_channel(channel, timeout=0):
                os.write(1, data)
        status += client.read_channel(STATUS, timeout=0) or b""
    with contextlib.suppress(Exception):
        client.close()
    return _exit_code(status)


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
