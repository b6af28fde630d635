"""The ASGI proxy in front of every tool: ``/tools/<id>/...``, HTTP and WebSocket.

Each request (and each WebSocket at its handshake) is checked: the tool is live, the
console login (session cookie) names a user who may reach it (``access.may_reach``, cached
for a few seconds), and the tool's ticket cookie was given to that same user. Only then is
it passed to the tool's Unix socket, with the tool's secret added (JupyterLab's token, which
never leaves the server) and the console's own cookies taken out. Answers pass back as they
come (streamed), minus any cookie that would shadow the console's. A JupyterLab terminal's
output is the one thing changed on its way: host folders named by the job's paths
(``lab_terminal``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from urllib.parse import quote

import httpx
from websockets.asyncio.client import unix_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from console.asgi_auth import cookies_of, headers_of, same_origin, user_of
from console.db import run_sync
from jobs.models import Tool
from jobs.tools import access, lab_terminal, launch, service, sockets
from resources.backends.base import BackendError
from resources.clusters import backend_of

log = logging.getLogger(__name__)
# httpx says every request it makes at INFO: the proxy makes one per request it serves.
logging.getLogger("httpx").setLevel(logging.WARNING)

HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
    "transfer-encoding", "upgrade", "host",
}  # fmt: skip
WS_HANDSHAKE = {"sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions",
                "sec-websocket-protocol"}  # fmt: skip
MAX_BODY = 512 * 1024 * 1024
ALLOWED_SECONDS = 5  # how long a "may reach" answer is reused for one user and tool
# How long a WebSocket may take to open in the tool: JupyterLab answers a kernel's channel
# only once the kernel has started, which on a busy node took more than ten seconds (it
# waits a minute for the kernel itself), and a refusal then broke the notebook's first cell.
UPSTREAM_OPEN_SECONDS = 60

_allowed: dict[tuple[int, int], float] = {}
_touched: dict[int, float] = {}
_clients: dict[str, httpx.AsyncClient] = {}


async def handle(scope, receive, send, tool_id: int, *, ticket: bool = True) -> None:
    """``ticket=False``: a tool's static file asked for outside its path (the login and the
    permission are still checked)."""
    tool = await run_sync(_tool, tool_id)
    refusal = await _refusal(scope, tool, ticket=ticket)
    if refusal is not None:
        status, text = refusal
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4000 + status})
        else:
            await _plain(send, status, text, tool)
        return
    _touch(tool.pk)
    if scope["type"] == "websocket":
        await _websocket(scope, receive, send, tool)
    else:
        await _http(scope, receive, send, tool)


def _tool(tool_id: int) -> Tool | None:
    return Tool.objects.select_related("devenv").filter(pk=tool_id).first()


async def _refusal(scope, tool: Tool | None, *, ticket: bool) -> tuple[int, str] | None:
    if scope["type"] == "websocket" and not same_origin(scope):
        return 403, "This connection did not come from the console's pages."
    user = await user_of(scope)
    if not user.is_authenticated:
        return 401, "Sign in to the console first."
    if tool is None or not await _may_reach(user, tool):
        return 404, "No such tool, or it has stopped."
    holder = access.ticket_holder(cookies_of(scope).get(access.cookie_name(tool.pk), ""), tool.pk)
    if ticket and holder != user.pk:
        return 403, "Your access to this tool has expired: open it again from the console."
    return None


async def _may_reach(user, tool: Tool) -> bool:
    key = (user.pk, tool.pk)
    now = time.monotonic()
    if _allowed.get(key, 0) > now:
        return True
    allowed = await run_sync(access.may_reach, user, tool)
    if allowed:
        _allowed[key] = now + ALLOWED_SECONDS
    else:
        _allowed.pop(key, None)
    return allowed


def _touch(tool_id: int) -> None:
    now = time.monotonic()
    if now - _touched.get(tool_id, 0) < service.TOUCH_SECONDS:
        return
    _touched[tool_id] = now
    task = asyncio.get_running_loop().run_in_executor(None, _touch_now, tool_id)
    task.add_done_callback(lambda done: done.exception())  # logged below, never raised


def _touch_now(tool_id: int) -> None:
    from django.db import close_old_connections

    try:
        service.touch(tool_id)
    except Exception:
        log.exception("could not note that tool %s was used", tool_id)
    finally:
        close_old_connections()


async def _plain(send, status: int, text: str, tool: Tool | None) -> None:
    link = ""
    if tool is not None and status == 403:
        page = await run_sync(access.page_of, tool)
        link = f' <a href="{quote(page)}" target="_top">Open it from the console</a>.'
    body = (
        "<!doctype html><meta charset=utf-8><title>Training console</title>"
        f"<p style='font-family:sans-serif'>{text}{link}</p>"
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/html; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _upstream_headers(scope, tool: Tool, *, websocket: bool) -> list[tuple[str, str]]:
    hidden = access.console_cookies() | {access.cookie_name(tool.pk)}
    headers = []
    for name, value in headers_of(scope).items():
        if name in HOP_BY_HOP or (websocket and name in WS_HANDSHAKE) or name == "authorization":
            continue
        if name == "cookie":
            kept = [
                part.strip()
                for part in value.split(";")
                if part.strip() and part.split("=", 1)[0].strip() not in hidden
            ]
            if not kept:
                continue
            value = "; ".join(kept)
        headers.append((name, value))
    headers.append(("authorization", f"token {tool.secret}"))
    return headers


def _target(scope) -> str:
    path = scope.get("raw_path") or scope["path"].encode()
    query = scope.get("query_string", b"")
    target = path.decode("latin-1")
    return f"{target}?{query.decode('latin-1')}" if query else target


def _client(address: str) -> httpx.AsyncClient:
    client = _clients.get(address)
    if client is None:
        transport = httpx.AsyncHTTPTransport(uds=sockets.reachable(address))
        client = httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(60, read=None))
        _clients[address] = client
    return client


class _TooLarge(Exception):
    pass


async def _read_body(receive) -> bytes | None:
    """The request's body, or None when the browser left; _TooLarge past MAX_BODY."""
    parts, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise _TooLarge
        parts.append(chunk)
        if not message.get("more_body"):
            return b"".join(parts)


async def _http(scope, receive, send, tool: Tool) -> None:
    try:
        body = await _read_body(receive)
    except _TooLarge:
        return await _plain(send, 413, "This upload is too large for the console.", None)
    if body is None:
        return
    hidden = access.console_cookies()
    request = _client(tool.address).build_request(
        scope["method"],
        "http://tool" + _target(scope),
        headers=[*_upstream_headers(scope, tool, websocket=False), ("host", _host(scope))],
        content=body,
    )
    try:
        answer = await _client(tool.address).send(request, stream=True)
    except httpx.HTTPError as error:
        log.info("tool %s did not answer: %s", tool.pk, error)
        return await _plain(send, 502, "The tool is not answering (it may be starting).", None)
    try:
        headers = []
        for name, value in answer.headers.raw:
            lower = name.lower().decode("latin-1")
            if lower in HOP_BY_HOP - {"host"}:
                continue
            if (
                lower == "set-cookie"
                and value.split(b"=", 1)[0].strip().decode("latin-1") in hidden
            ):
                continue
            headers.append((name, value))
        await send(
            {"type": "http.response.start", "status": answer.status_code, "headers": headers}
        )
        async for chunk in answer.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    finally:
        await answer.aclose()


def _host(scope) -> str:
    return headers_of(scope).get("host", "localhost")


async def _terminal_folders(scope, tool: Tool) -> dict[str, str]:
    """For a JupyterLab terminal's socket, host folder -> the job's path for it (what its
    shell prints is named as the job knows it); empty for every other socket."""
    if tool.kind != Tool.Kind.JUPYTER or not lab_terminal.is_terminal(scope["path"]):
        return {}
    # Tools run on this machine's backend (the proxy reaches their sockets here).
    backend = backend_of(None)
    return await asyncio.to_thread(backend.path_names, tool.workload_id, launch.replica_name(tool))


async def _websocket(scope, receive, send, tool: Tool) -> None:
    first = await receive()
    if first["type"] != "websocket.connect":
        return
    protocols = [p for p in scope.get("subprotocols", []) if p]
    headers = [(n, v) for n, v in _upstream_headers(scope, tool, websocket=True) if n != "origin"]
    try:
        folders = await _terminal_folders(scope, tool)
    except (BackendError, OSError) as error:
        log.info("tool %s: no folder names for its terminal: %s", tool.pk, error)
        await send({"type": "websocket.close", "code": 1011})
        return
    try:
        upstream = await unix_connect(
            sockets.reachable(tool.address),
            uri="ws://localhost" + _target(scope),
            subprotocols=protocols or None,
            additional_headers=headers,
            max_size=None,
            open_timeout=UPSTREAM_OPEN_SECONDS,
        )
    except (OSError, InvalidHandshake, InvalidStatus, TimeoutError) as error:
        log.info("tool %s refused a WebSocket: %s", tool.pk, error)
        await send({"type": "websocket.close", "code": 1011})
        return
    accept = {"type": "websocket.accept"}
    if upstream.subprotocol:
        accept["subprotocol"] = upstream.subprotocol
    await send(accept)

    async def browser_to_tool() -> None:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            _touch(tool.pk)
            data = message.get("bytes")
            await upstream.send(data if data is not None else message.get("text", ""))

    async def tool_to_browser() -> None:
        if folders:
            return await lab_terminal.relay(upstream, send, folders)
        with contextlib.suppress(ConnectionClosed):
            async for data in upstream:
                if isinstance(data, bytes):
                    await send({"type": "websocket.send", "bytes": data})
                else:
                    await send({"type": "websocket.send", "text": data})

    tasks = [asyncio.ensure_future(browser_to_tool()), asyncio.ensure_future(tool_to_browser())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await upstream.close()
        with contextlib.suppress(Exception):
            await send({"type": "websocket.close", "code": 1000})
