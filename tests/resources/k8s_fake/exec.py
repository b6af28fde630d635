"""The fake API server's ``pods/exec``: the WebSocket a client opens to run a command in a
pod's container, as the API server serves it with the ``v4.channel.k8s.io`` subprotocol.

Each binary message starts with its channel: 0 stdin (client to server), 1 stdout and 2
stderr (server to client), 3 the command's end as a metav1.Status, 4 a terminal size
``{"Width": W, "Height": H}`` (client to server). The "container" is a real process of
this machine run on a PTY in a folder of its own (the pod's working directory), with the
pod's environment variables: what a debug shell would see in the pod, minus the image.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import select
import struct
import subprocess
import termios
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455
PROTOCOL = "v4.channel.k8s.io"


def handshake(handler, offered: str) -> bool:
    """Answer the upgrade (101) choosing our subprotocol; False (400 sent) if not offered."""
    protocols = [p.strip() for p in offered.split(",")]
    if PROTOCOL not in protocols:
        handler.send_error(400, "no supported subprotocol")
        return False
    key = handler.headers.get("Sec-WebSocket-Key", "")
    accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    handler.send_response(101, "Switching Protocols")
    handler.send_header("Upgrade", "websocket")
    handler.send_header("Connection", "Upgrade")
    handler.send_header("Sec-WebSocket-Accept", accept)
    handler.send_header("Sec-WebSocket-Protocol", PROTOCOL)
    handler.end_headers()
    handler.wfile.flush()
    return True


def read_frame(stream) -> tuple[int, bytes] | None:
    """(opcode, payload) of the client's next frame (clients always mask), None at the end
    (the connection's stream closed by the server as the session ends is an end too)."""
    try:
        head = stream.read(2)
    except (OSError, ValueError):
        return None
    if len(head) < 2:
        return None
    opcode, length = head[0] & 0x0F, head[1] & 0x7F
    if length == 126:
        length = struct.unpack("!H", stream.read(2))[0]
    elif length == 127:
        length = struct.unpack("!Q", stream.read(8))[0]
    mask = stream.read(4) if head[1] & 0x80 else b"\0\0\0\0"
    data = stream.read(length)
    return opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def frame(payload: bytes, opcode: int = 2) -> bytes:
    """One unmasked frame from the server."""
    size = len(payload)
    if size < 126:
        head = struct.pack("!BB", 0x80 | opcode, size)
    elif size < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 126, size)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, size)
    return head + payload


def status_of(code: int) -> dict:
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {}, "status": "Failure",
        "message": f"command terminated with non-zero exit code: exit status {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }  # fmt: skip


def serve(handler, pod: dict, workdir: Path) -> None:
    """Run the exec's command on a PTY in ``workdir`` and relay it until it ends."""
    query = parse_qs(urlsplit(handler.path).query)
    command = query.get("command") or ["/bin/sh"]
    container = (pod["spec"].get("containers") or [{}])[0]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir), "TERM": "xterm"}
    env.update({e["name"]: e.get("value", "") for e in container.get("env") or ()})
    master, slave = os.openpty()
    process = subprocess.Popen(
        command, stdin=slave, stdout=slave, stderr=slave, cwd=workdir, env=env,
        start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    out = handler.wfile
    lock = threading.Lock()

    def send(payload: bytes) -> None:
        with lock, contextlib.suppress(OSError):
            out.write(frame(payload))
            out.flush()

    def keys() -> None:
        while (got := read_frame(handler.rfile)) is not None:
            opcode, data = got
            if opcode == 8:  # close
                break
            if opcode in (1, 2) and data[:1] == b"\x00":
                with contextlib.suppress(OSError):
                    os.write(master, data[1:])
            elif opcode in (1, 2) and data[:1] == b"\x04":
                size = json.loads(data[1:])
                packed = struct.pack("HHHH", size["Height"], size["Width"], 0, 0)
                with contextlib.suppress(OSError):
                    fcntl.ioctl(master, termios.TIOCSWINSZ, packed)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)  # the client left: the shell ends with the connection

    threading.Thread(target=keys, daemon=True).start()
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the terminal's every process has closed it
                data = b""
            if not data:
                break
            send(b"\x01" + data)
        elif process.poll() is not None:
            break
    code = process.wait()
    os.close(master)
    send(b"\x03" + json.dumps(status_of(code if code >= 0 else 128 - code)).encode())
    with lock, contextlib.suppress(OSError):
        out.write(frame(b"", 8))
        out.flush()
