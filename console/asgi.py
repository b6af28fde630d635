"""The web server's entry point (ASGI): Django for every page, and beside it the two kinds of
connection Django's views cannot carry — the proxy to the tools a job opens (TensorBoard,
JupyterLab: HTTP and WebSocket under ``/tools/<id>/``) and the debug terminal's WebSocket.

Both check the console's own login (the session cookie) and the job's permission on every
request or connection, so a tool is never reachable on a port of its own; see
``console/asgi_auth.py`` and ``jobs/tools/proxy.py``.
"""

import logging
import os
import re

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
django_application = get_asgi_application()
log = logging.getLogger(__name__)

TOOL = re.compile(r"^/tools/(?P<tool>[0-9]{1,18})(?P<rest>/.*)?$")
# TensorBoard's stylesheet asks for its fonts at the site's root, whatever its path prefix:
# such a request from a tool's page (its Referer) goes to that tool.
TOOL_FONTS = "/font-roboto/"
TOOL_REFERER = re.compile(r"^https?://[^/]+/tools/(?P<tool>[0-9]{1,18})/")
TERMINAL = re.compile(
    r"^/jobs/(?P<job>[0-9]{1,18})/terminal/(?P<replica>[A-Za-z0-9_.-]{1,120})/socket/$"
)


async def application(scope, receive, send):
    kind = scope["type"]
    if kind == "lifespan":
        return await _lifespan(receive, send)
    if kind == "http" and not _outside_django(scope):
        return await django_application(scope, receive, send)
    started = []

    async def sending(message):
        started.append(message["type"])
        await send(message)

    try:
        return await _outside(scope, receive, sending)
    except Exception as error:
        from console import busy

        if not busy.unavailable(error):
            raise
        log.warning("%s %s: server unavailable (%s)", kind, scope.get("path"), error)
        await _busy(kind, started, sending)


def _outside_django(scope) -> bool:
    path = scope.get("path", "")
    return bool(TOOL.match(path)) or (
        path.startswith(TOOL_FONTS) and _tool_of_referer(scope) is not None
    )


async def _busy(kind: str, started: list[str], send) -> None:
    """The database or Redis could not answer: "try again", never a server error."""
    from console import busy

    if kind == "websocket":
        # 1013: try again later. Before the handshake is accepted, a close refuses it.
        await send({"type": "websocket.close", "code": 1013})
    elif "http.response.start" not in started:
        answer = busy.response(None)
        await send({
            "type": "http.response.start",
            "status": answer.status_code,
            "headers": [(k.lower().encode(), v.encode()) for k, v in answer.items()],
        })  # fmt: skip
        await send({"type": "http.response.body", "body": answer.content})


async def _outside(scope, receive, send):
    """The tools' proxy and the debug terminal."""
    kind = scope["type"]
    path = scope.get("path", "")
    match = TOOL.match(path)
    if match:
        from jobs.tools import proxy

        return await proxy.handle(scope, receive, send, int(match["tool"]))
    if kind == "http" and path.startswith(TOOL_FONTS):
        match = _tool_of_referer(scope)
        if match is not None:
            from jobs.tools import proxy

            # The ticket's cookie is scoped to /tools/<id>/: fonts are asked for without it.
            scope = {**scope, "path": f"/tools/{match['tool']}{path}", "raw_path": None}
            return await proxy.handle(scope, receive, send, int(match["tool"]), ticket=False)
    if kind == "websocket":
        match = TERMINAL.match(path)
        if match:
            from jobs.terminal import socket

            return await socket.handle(scope, receive, send, int(match["job"]), match["replica"])
        return await send({"type": "websocket.close", "code": 4404})
    return await django_application(scope, receive, send)


def _tool_of_referer(scope):
    for name, value in scope.get("headers", []):
        if name.lower() == b"referer":
            return TOOL_REFERER.match(value.decode("latin-1"))
    return None


async def _lifespan(receive, send) -> None:
    """Django has nothing to start or stop; answer so the server does not warn."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
