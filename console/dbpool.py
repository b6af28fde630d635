"""How many database connections the console's processes may hold, and the pool that bounds
them.

The web server is ASGI: Django runs each request's view in a thread of its own, and a
persistent connection per thread (``CONN_MAX_AGE``) grows with the number of users until the
server refuses new clients. Instead each process has one psycopg pool: a request borrows a
connection and gives it back when it ends, and when all are lent it waits up to
``DB_POOL_TIMEOUT`` seconds, then gets the "busy, try again" page (console/busy.py).

The Celery worker's processes run one task at a time and Celery's Django fixup closes the
pool after each task, so a worker process holds at most one connection. What the layout of
``make run`` needs in all is :func:`Layout.needed`; the supervisor checks it against the
server's ``max_connections`` before anything starts.
"""

from __future__ import annotations

from dataclasses import dataclass

from console import config

# Connections the superuser keeps for itself by default (PostgreSQL's
# superuser_reserved_connections); the console's own role may be a superuser, but an admin
# who must get in while the console is busy needs them.
SERVER_RESERVED = 3
# The worker's own process (its start-up recovery and heartbeat), beat, and one command run
# beside the console (a `manage.py` command, the supervisor's own check).
FIXED = 3


@dataclass(frozen=True)
class Layout:
    """The processes `make run` starts and the pool each may fill."""

    web_workers: int
    web_pool: int
    worker_concurrency: int

    @classmethod
    def from_env(cls) -> Layout:
        return cls(
            web_workers=config.env_int("WEB_WORKERS", 2, low=1, high=64),
            web_pool=pool_size(),
            worker_concurrency=config.env_int("WORKER_CONCURRENCY", 2, low=1, high=64),
        )

    def needed(self) -> int:
        """The most connections these processes can hold at once."""
        return self.web_workers * self.web_pool + self.worker_concurrency + FIXED

    def problem(self, max_connections: int, reserved: int = SERVER_RESERVED) -> str | None:
        """Why this layout does not fit a server that allows ``max_connections``, or None."""
        room = max_connections - reserved
        if self.needed() <= room:
            return None
        return (
            f"the console may open {self.needed()} database connections "
            f"(WEB_WORKERS {self.web_workers} x DB_POOL_SIZE {self.web_pool} + "
            f"WORKER_CONCURRENCY {self.worker_concurrency} + {FIXED}), but the server allows "
            f"{room} ({max_connections} max_connections - {reserved} reserved): lower "
            "DB_POOL_SIZE or WEB_WORKERS, or raise max_connections"
        )


def pool_size() -> int:
    return config.env_int("DB_POOL_SIZE", 10, low=1, high=500)


def pool_options() -> dict:
    """Django's ``OPTIONS["pool"]`` (psycopg_pool.ConnectionPool's arguments)."""
    timeout = float(config.env_int("DB_POOL_TIMEOUT", 5, low=1, high=300))
    return {
        # Nothing is opened ahead of need: a worker process opens its pool per task.
        "min_size": 0,
        "max_size": pool_size(),
        # A request waits this long for a connection before it is told to try again.
        "timeout": timeout,
        # While the server is away, a connection that cannot be made is given up after this
        # long, so that its place in the pool is free to try again the moment the server is
        # back (psycopg's default, five minutes of backing off, would keep it away).
        "reconnect_timeout": timeout,
    }
