"""The web server's entry point (ASGI): Django for every page, and beside it the two kinds of
connection Django's views cannot carry — the proxy to the tools a job opens (TensorBoard,
JupyterLab: HTTP and WebSocket under ``/tools/<id>/``) and the debug terminal's WebSocket.

Both check the console's own login (the session cookie) and the job's permission on every
request or connection, so a tool is never reachable on a port of its own; see
``console/asgi_auth.py`` and ``jobs/tools/proxy.py``.
"""

import os
import re

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
django_application = get_asgi_application()

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
