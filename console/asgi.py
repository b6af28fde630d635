"""The web server's entry point (ASGI): Django for every page, and beside it the two kinds of
connection Django's views cannot carry, which apps register by address in
``console.hooks.connection_routes`` (the jobs app: the proxy to the tools a job opens and the
debug terminal's WebSocket, see ``jobs/connections.py``).

Each checks the console's own login (the session cookie) and the permission on every request
or connection, so a tool is never reachable on a port of its own; see
``console/asgi_auth.py``.
"""

import logging
import os

from django.core.asgi import get_asgi_application

from console import heap, hooks

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
django_application = get_asgi_application()
heap.freeze_start_up()

log = logging.getLogger(__name__)


async def application(scope, receive, send):
    kind = scope["type"]
    if kind == "lifespan":
        return await _lifespan(receive, send)
    handler = _outside(scope)
    if handler is None:
        if kind == "websocket":  # no page speaks WebSocket
            return await send({"type": "websocket.close", "code": 4404})
        return await django_application(scope, receive, send)
    started = []

    async def sending(message):
        started.append(message["type"])
        await send(message)

    try:
        return await handler(scope, receive, sending)
    except Exception as error:
        from console import busy

        if not busy.unavailable(error):
            raise
        log.warning("%s %s: server unavailable (%s)", kind, scope.get("path"), error)
        await _busy(kind, started, sending)


def _outside(scope):
    """The handler an app registered for this connection (console.hooks.connection_routes),
    or None: Django's."""
    for route in hooks.connection_routes:
        handler = route(scope)
        if handler is not None:
            return handler
    return None


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


async def _lifespan(receive, send) -> None:
    """Django has nothing to start or stop; answer so the server does not warn."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
