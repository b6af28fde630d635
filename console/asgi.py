"""The web server's entry point (ASGI): Django for every page, and beside it the two kinds of
connection Django's views cannot carry, which apps register by address in
``console.hooks.connection_routes`` (the jobs app: the proxy to the tools a job opens and the
debug terminal's WebSocket, see ``jobs/connections.py``).

Each checks the console's own login (the session cookie) and the permission on every request
or connection, so a tool is never reachable on a port of its own; see
``console/asgi_auth.py``.
"""

import asyncio
import logging
import os

from django.conf import settings
from django.core.asgi import get_asgi_application

from console import dbpool, heap, hooks

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
django_application = get_asgi_application()
heap.freeze_start_up()

log = logging.getLogger(__name__)


class Turns:
    """Django's requests at most as many at once as the process's pool has connections; the
    others wait here for their turn, in order of arrival, with no thread held.

    Without it each request past the pool's size would wait in a thread on the pool, and be
    told "busy" after DB_POOL_TIMEOUT (5 s): a burst of users on a small machine got 503s
    from a database that answered fine. That short wait is now only for a database that does
    not give connections; a busy console answers late rather than "busy", up to
    REQUEST_QUEUE_SECONDS of waiting. Static files (served by WhiteNoise, no database) do
    not queue."""

    def __init__(self, size: int, patience: float):
        self.size, self.patience = size, patience
        self._free = asyncio.Semaphore(size)

    async def take(self) -> bool:
        """Whether the turn came within the patience."""
        try:
            async with asyncio.timeout(self.patience):
                await self._free.acquire()
        except TimeoutError:
            return False
        return True

    def give_back(self) -> None:
        self._free.release()


turns = Turns(dbpool.pool_size(), settings.REQUEST_QUEUE_SECONDS)
STATIC_PREFIX = "/static/"


async def application(scope, receive, send):
    kind = scope["type"]
    if kind == "lifespan":
        return await _lifespan(receive, send)
    handler = _outside(scope)
    if handler is None:
        if kind == "websocket":  # no page speaks WebSocket
            return await send({"type": "websocket.close", "code": 4404})
        if scope.get("path", "").startswith(STATIC_PREFIX):
            return await django_application(scope, receive, send)
        if not await turns.take():
            log.warning("%s: no turn in %s s, answered busy", scope.get("path"), turns.patience)
            return await _busy(kind, [], send)
        try:
            return await django_application(scope, receive, send)
        finally:
            turns.give_back()
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
