"""The connections Django's views cannot carry, routed by address: the proxy to the tools a
job opens (TensorBoard, JupyterLab: HTTP and WebSocket under ``/tools/<id>/``) and the debug
terminal's WebSocket. console/asgi.py asks :func:`route` (registered in JobsConfig.ready)."""

from __future__ import annotations

import re

TOOL = re.compile(r"^/tools/(?P<tool>[0-9]{1,18})(?P<rest>/.*)?$")
# TensorBoard's stylesheet asks for its fonts at the site's root, whatever its path prefix:
# such a request from a tool's page (its Referer) goes to that tool.
TOOL_FONTS = "/font-roboto/"
TOOL_REFERER = re.compile(r"^https?://[^/]+/tools/(?P<tool>[0-9]{1,18})/")
TERMINAL = re.compile(
    r"^/jobs/(?P<job>[0-9]{1,18})/terminal/(?P<replica>[A-Za-z0-9_.-]{1,120})/socket/$"
)


def route(scope):
    """The handler ``(scope, receive, send)`` of a connection outside Django, or None."""
    # Imported on first use: only the web server serves these, and every process registers
    # this route when the app is ready.
    from jobs.terminal import socket
    from jobs.tools import proxy

    kind = scope["type"]
    path = scope.get("path", "")
    match = TOOL.match(path)
    if match:
        tool = int(match["tool"])
        return lambda scope, receive, send: proxy.handle(scope, receive, send, tool)
    if kind == "http" and path.startswith(TOOL_FONTS):
        match = _tool_of_referer(scope)
        if match is not None:
            tool = int(match["tool"])
            # The ticket's cookie is scoped to /tools/<id>/: fonts are asked for without it.
            moved = {"path": f"/tools/{tool}{path}", "raw_path": None}
            return lambda scope, receive, send: proxy.handle(
                {**scope, **moved}, receive, send, tool, ticket=False
            )
    if kind == "websocket":
        match = TERMINAL.match(path)
        if match:
            job, replica = int(match["job"]), match["replica"]
            return lambda scope, receive, send: socket.handle(scope, receive, send, job, replica)
    return None


def _tool_of_referer(scope):
    for name, value in scope.get("headers", []):
        if name.lower() == b"referer":
            return TOOL_REFERER.match(value.decode("latin-1"))
    return None
