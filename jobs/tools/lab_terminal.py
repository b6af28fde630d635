"""JupyterLab's terminal through the proxy, naming the job's paths as the debug terminal does.

The tool's processes run in host folders (see local_runner_layout), so its shell's ``pwd``
or ``command -v python`` would print this machine's folders, which a user never sees. The
terminal's WebSocket (terminado's ``/terminals/websocket/<name>``) carries JSON text frames:
``["stdout", "text"]`` from the tool, ``["stdin", ...]``, ``["set_size", ...]`` to it, and
a few others. The proxy passes each stdout text through a :class:`PathStream`, which holds a
possibly cut host folder at a frame's end back until the next frame says how it goes on, or
until nothing has followed for a moment. Every other frame passes as it came.
"""

from __future__ import annotations

import asyncio
import json
import re

from websockets.exceptions import ConnectionClosed

from jobs.terminal.paths import QUIET_SECONDS, PathStream

SOCKET_PATH = re.compile(r"^/tools/[0-9]+/terminals/websocket/\w+$")


def is_terminal(path: str) -> bool:
    """Whether a WebSocket at ``path`` (of a JupyterLab tool) is one of its terminals."""
    return SOCKET_PATH.fullmatch(path) is not None


class Frames:
    """The tool's frames, with host folders in stdout named by the job's paths."""

    def __init__(self, folders: dict[str, str]):
        self.stream = PathStream(folders)

    @property
    def holding(self) -> bool:
        return self.stream.holding

    def passed(self, data: str | bytes) -> list[str | bytes]:
        """The frames to send the browser for ``data`` from the tool, in order."""
        text = _stdout(data)
        if text is None:
            return [*self.flush(), data]
        held_before = self.stream.holding
        named = self.stream.feed_text(text)
        if named == text and not held_before and not self.stream.holding:
            return [data]  # nothing to name: the frame as terminado wrote it
        return [json.dumps(["stdout", named])] if named else []

    def flush(self) -> list[str]:
        """What was held back, as a frame of its own (nothing more came)."""
        held = self.stream.flush()
        return [json.dumps(["stdout", held])] if held else []


def _stdout(data: str | bytes) -> str | None:
    if not isinstance(data, str) or not data.startswith('["stdout"'):
        return None
    try:
        message = json.loads(data)
    except ValueError:
        return None
    if len(message) == 2 and isinstance(message[1], str):
        return message[1]
    return None


async def relay(upstream, send, folders: dict[str, str]) -> None:
    """The tool's side of a terminal's WebSocket to the browser, until the tool closes it."""
    frames = Frames(folders)

    async def forward(batch) -> None:
        for data in batch:
            key = "bytes" if isinstance(data, bytes) else "text"
            await send({"type": "websocket.send", key: data})

    while True:
        try:
            if frames.holding:
                try:
                    data = await asyncio.wait_for(upstream.recv(), QUIET_SECONDS)
                except TimeoutError:
                    await forward(frames.flush())  # a prompt must not wait for more output
                    continue
            else:
                data = await upstream.recv()
        except ConnectionClosed:
            await forward(frames.flush())
            return
        await forward(frames.passed(data))
