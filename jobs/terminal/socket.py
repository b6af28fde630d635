"""The debug terminal's WebSocket (``/jobs/<id>/terminal/<replica>/socket/``, routed by
console/asgi.py): a shell in the replica through the backend's ``open_shell``.

Frames: binary both ways is the terminal's data (keys in, output out); a text frame from the
page is ``{"rows": R, "cols": C}`` when its window changes size. A refusal accepts and then
closes with a code of :mod:`jobs.terminal.access` (the page words it), except a handshake
from another site's page, which is refused outright. While it is open the access is asked
again every ``RECHECK_SECONDS``: a share withdrawn, a logout or the end of the hours kept
close it. Closing it, from either side, ends the shell and everything of its session; so no
shell outlives its socket, idle or not. Opening and closing are job events (who, which node).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from urllib.parse import parse_qs

from django.utils.translation import gettext_noop

from console.asgi_auth import same_origin, user_of
from console.db import run_sync
from console.params import whole_number
from console.words import said
from jobs import lifecycle
from jobs.backend import attempt_backend
from jobs.terminal import access
from jobs.terminal.paths import QUIET_SECONDS, PathStream
from resources.backends.base import BackendError

log = logging.getLogger(__name__)

RECHECK_SECONDS = 15.0
READ_SIZE = 65536


async def handle(scope, receive, send, job_id: int, replica: str) -> None:
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    if not same_origin(scope):
        # Another site's page: no handshake at all (a browser sends our cookie with it).
        await send({"type": "websocket.close", "code": access.FORBIDDEN})
        return
    user = await user_of(scope)
    answer = await run_sync(access.check, user, job_id, replica)
    await send({"type": "websocket.accept"})
    if isinstance(answer, access.Refusal):
        await _close(send, answer.code, answer.words)
        return
    rows, cols = _size(scope)
    try:
        backend = await run_sync(attempt_backend, answer.attempt)
        # In this thread (the event loop's, which lives as long as the process): the shell
        # dies with the thread that started it (see local_runner_shell).
        shell = backend.open_shell(answer.attempt.workload_id, replica, rows, cols)
    except BackendError as error:
        await _send_text(send, {"error": str(error)})
        await _close(send, access.UNAVAILABLE, str(error))
        return
    await run_sync(_record, answer, user, opened=True)
    try:
        code = await Session(shell, scope, receive, send, answer).run()
    finally:
        await asyncio.get_running_loop().run_in_executor(None, shell.end)
        await run_sync(_record, answer, user, opened=False)
    if code is not None:
        await _close(send, code, str(access.WORDS.get(code, "")))


class Session:
    """One open terminal: the shell's output to the page, the page's keys and sizes to the
    shell, and the periodic access check. Ends with the first of the three to finish."""

    def __init__(self, shell, scope, receive, send, grant: access.Grant):
        self.shell = shell
        self.scope = scope
        self.receive = receive
        self.send = send
        self.grant = grant
        self.output: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.stream = PathStream(shell.folders)

    async def run(self) -> int | None:
        """Returns the close code to send (None: the page left, or the shell ended)."""
        loop = asyncio.get_running_loop()
        loop.add_reader(self.shell.fd, self._readable)
        tasks = [
            asyncio.create_task(self._pump()),
            asyncio.create_task(self._keys()),
            asyncio.create_task(self._recheck()),
        ]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            return next(iter(done)).result()
        finally:
            loop.remove_reader(self.shell.fd)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _readable(self) -> None:
        try:
            data = os.read(self.shell.fd, READ_SIZE)
        except BlockingIOError:
            return
        except OSError:  # EIO: every process of the terminal has closed it
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self.shell.fd)
            self.output.put_nowait(None)
        else:
            self.output.put_nowait(data)

    async def _pump(self) -> int:
        while True:
            if self.stream.holding:
                try:
                    data = await asyncio.wait_for(self.output.get(), QUIET_SECONDS)
                except TimeoutError:
                    await self._send(self.stream.flush())
                    continue
            else:
                data = await self.output.get()
            if data is None:
                await self._send(self.stream.flush())
                await self._send("\r\n[the shell ended]\r\n")
                return 1000
            await self._send(self.stream.feed(data))

    async def _send(self, text: str) -> None:
        if text:
            await self.send({"type": "websocket.send", "bytes": text.encode()})

    async def _keys(self) -> None:
        while True:
            message = await self.receive()
            if message["type"] == "websocket.disconnect":
                return None
            if message.get("bytes") is not None:
                await _write_all(self.shell.fd, message["bytes"])
            elif message.get("text") is not None:
                self._resize(message["text"])

    def _resize(self, text: str) -> None:
        try:
            size = json.loads(text)
            rows, cols = int(size["rows"]), int(size["cols"])
        except (ValueError, TypeError, KeyError):
            return  # not a size: ignored, as a terminal ignores a sequence it does not know
        with contextlib.suppress(OSError):
            self.shell.resize(rows, cols)

    async def _recheck(self) -> int:
        while True:
            await asyncio.sleep(RECHECK_SECONDS)
            user = await user_of(self.scope)  # a logout or password change ends access
            answer = await run_sync(access.check, user, self.grant.job.pk, self.grant.replica)
            if isinstance(answer, access.Refusal):
                return answer.code


async def _write_all(fd: int, data: bytes) -> None:
    while data:
        try:
            written = os.write(fd, data)
        except BlockingIOError:
            await asyncio.sleep(0.01)  # the shell is not reading: wait for it
            continue
        except OSError:
            return  # the shell has gone; the output side says so
        data = data[written:]


def _record(grant: access.Grant, user, *, opened: bool) -> None:
    message = (
        gettext_noop("%(user)s opened a debug terminal on %(node)s.")
        if opened
        else gettext_noop("%(user)s closed the debug terminal on %(node)s.")
    )
    lifecycle.record(grant.job, said(message, user=user.username, node=grant.label), actor=user)


def _size(scope) -> tuple[int, int]:
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    rows = whole_number((query.get("rows") or [""])[0], low=1, high=1000) or 24
    cols = whole_number((query.get("cols") or [""])[0], low=1, high=1000) or 80
    return rows, cols


async def _send_text(send, payload: dict) -> None:
    await send({"type": "websocket.send", "text": json.dumps(payload)})


async def _close(send, code: int, reason: str = "") -> None:
    # A close frame's reason is at most 123 bytes.
    reason = reason.encode()[:123].decode(errors="ignore")
    with contextlib.suppress(Exception):
        await send({"type": "websocket.close", "code": code, "reason": reason})
