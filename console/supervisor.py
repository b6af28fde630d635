"""``make run``: everything the console needs, in the foreground, stopped by one Ctrl-C.

Checks the configured servers (or starts the embedded ones), migrates, seeds the demo data,
then runs the web server, a Celery worker and Celery beat, prefixing their output with their
names. Ctrl-C (or SIGTERM) stops the three and then the embedded servers.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from console import config, dbpool, embedded

BASE_DIR = Path(__file__).resolve().parent.parent
STOP_GRACE_SECONDS = 15


def say(line: str) -> None:
    print(f"console | {line}", flush=True)


def fail(line: str) -> None:
    print(f"error: {line}", file=sys.stderr, flush=True)
    sys.exit(2)


def check_database(url: str) -> None:
    """The database answers, and allows as many connections as the processes may open."""
    import psycopg

    db = config.parse_database_url("DATABASE_URL", url)
    try:
        with psycopg.connect(
            dbname=db.name, user=db.user or None, password=db.password or None,
            host=db.host, port=db.port or None, connect_timeout=5,
        ) as connection:  # fmt: skip
            allowed = connection.execute(
                "SELECT current_setting('max_connections')::int, "
                "current_setting('superuser_reserved_connections')::int"
            ).fetchone()
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise config.ConfigError("DATABASE_URL", f"cannot connect ({reason})") from None
    layout = dbpool.Layout.from_env()
    problem = layout.problem(*allowed)
    if problem:
        raise config.ConfigError("DB_POOL_SIZE", problem)
    say(f"Database connections: at most {layout.needed()} of the server's {allowed[0]}")


def check_broker(url: str) -> None:
    from kombu import Connection

    config.check_broker_url("CELERY_BROKER_URL", url)
    try:
        with Connection(url, connect_timeout=5) as connection:
            connection.ensure_connection(max_retries=1, timeout=5)
    except Exception as exc:  # kombu wraps each transport's own errors differently
        raise config.ConfigError("CELERY_BROKER_URL", f"cannot connect ({exc})") from None


def prepare_services(var_dir: Path) -> None:
    named = {
        name: os.environ.get(name, "").strip() for name in ("DATABASE_URL", "CELERY_BROKER_URL")
    }
    if named["DATABASE_URL"]:
        check_database(named["DATABASE_URL"])
    if named["CELERY_BROKER_URL"]:
        check_broker(named["CELERY_BROKER_URL"])
    for name in embedded.ensure_services(var_dir):
        what = "PostgreSQL" if name == "DATABASE_URL" else "Redis"
        say(f"{name} is not set: using the embedded {what} under {var_dir}")
    if not named["DATABASE_URL"]:
        check_database(os.environ["DATABASE_URL"])


def manage(*args: str) -> None:
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=BASE_DIR)
    if result.returncode != 0:
        fail(f"manage.py {' '.join(args)} failed (exit {result.returncode})")


def pump(name: str, stream) -> None:
    for line in iter(stream.readline, b""):
        sys.stdout.write(f"{name:7} | {line.decode(errors='replace')}")
        sys.stdout.flush()


# How often a child (web, worker, beat) may die in a minute and be started again.
RESTARTS_PER_MINUTE = 3


class Children:
    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen] = {}
        self.argv: dict[str, list[str]] = {}
        self.restarts: dict[str, list[float]] = {}

    def start(self, name: str, argv: list[str]) -> None:
        self.argv[name] = argv
        proc = subprocess.Popen(
            argv,
            cwd=BASE_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            # Their own process group: the terminal's Ctrl-C reaches only the supervisor,
            # which then stops them in order.
            start_new_session=True,
        )
        threading.Thread(target=pump, args=(name, proc.stdout), daemon=True).start()
        self.procs[name] = proc

    def restart(self, name: str) -> bool:
        """Start ``name`` again unless it already died RESTARTS_PER_MINUTE times in the last
        minute (then it is broken, not unlucky, and the caller stops everything)."""
        now = time.monotonic()
        recent = [at for at in self.restarts.get(name, []) if now - at < 60]
        if len(recent) >= RESTARTS_PER_MINUTE:
            return False
        self.restarts[name] = [*recent, now]
        self.start(name, self.argv[name])
        return True

    def exited(self) -> tuple[str, int] | None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                return name, proc.returncode
        return None

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for name, proc in self.procs.items():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                say(f"{name} did not stop in {STOP_GRACE_SECONDS}s: killing it")
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            # Whatever the child left in its group (pool processes) goes with it.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


def _as_the_proxy() -> dict[str, str]:
    """Headers of a request as the reverse proxy sends it in production: a host the
    console serves, and HTTPS if it insists on it (else the answer is a redirect)."""
    from django.conf import settings

    hosts = [host for host in settings.ALLOWED_HOSTS if "*" not in host and host[:1] != "."]
    headers = {"Host": hosts[0] if hosts else "127.0.0.1"}
    if settings.SECURE_PROXY_SSL_HEADER:
        meta, value = settings.SECURE_PROXY_SSL_HEADER
        headers[meta.removeprefix("HTTP_").replace("_", "-").title()] = value
    return headers


def wait_for_web(port: int, children: Children, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if children.exited():
            return False
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            connection.request("GET", "/login/", headers=_as_the_proxy())
            if connection.getresponse().status < 500:
                return True
        except OSError:
            pass
        finally:
            connection.close()
        time.sleep(0.3)
    return False


def banner(port: int) -> None:
    from console.demo import DEMO_PASSWORD, USERS

    say("")
    say(f"The console is running at http://127.0.0.1:{port}/")
    if config.env_bool("DEMO_MODE", False):
        names = ", ".join(name for name, *_ in USERS)
        say(f"Demo logins: {names} — password {DEMO_PASSWORD!r} (admin is a platform admin)")
    say("Press Ctrl-C to stop.")
    say("")


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    stopping = threading.Event()

    def on_signal(signum, frame):
        stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    children = Children()
    try:
        port, var_dir = _prepare()
        _start_children(children, port, var_dir)
        if wait_for_web(port, children):
            banner(port)
        _watch(children, var_dir, stopping)
    except config.ConfigError as exc:
        fail(str(exc))
    finally:
        if children.procs:
            say("Stopping web, worker and beat…")
            children.stop()
        embedded.stop_services()
        if children.procs:
            say("Stopped.")
            _say_what_keeps_running()
    gone = children.exited()
    sys.exit(0 if stopping.is_set() else (gone[1] or 1) if gone else 0)


def _prepare() -> tuple[int, Path]:
    """Everything before the three processes start: the settings read, the servers checked
    (or the embedded ones started), the database migrated and the demo seeded. Returns the
    web server's port and the folder of the console's own state."""
    if not os.environ.get("DEMO_MODE", "").strip():
        # `make run` is a demo, unless it serves production.
        os.environ["DEMO_MODE"] = "0" if config.env_bool("PRODUCTION", False) else "1"
    port = config.env_int("PORT", 8000, low=1, high=65535)
    var_dir = Path(config.env_str("VAR_DIR") or BASE_DIR / "var").resolve()
    var_dir.mkdir(parents=True, exist_ok=True)
    prepare_services(var_dir)
    # Every other variable is read here too, so a bad one stops us before anything starts.
    from django.conf import settings

    settings.INSTALLED_APPS  # noqa: B018
    manage("prepare")  # migrate, make_runtime (local backend only), seed_demo
    return port, var_dir


def _start_children(children: Children, port: int, var_dir: Path) -> None:
    """The web server, a Celery worker and Celery beat."""
    python = sys.executable
    # LOG_LEVEL=DEBUG also shows every task's "succeeded" line (console/celery.py).
    celery_level = config.env_str("LOG_LEVEL", "INFO").upper()
    # Off by default: an open job page asks for its log every second.
    access = ["--access-logfile", "-"] if config.env_bool("ACCESS_LOG", False) else []
    children.start(
        "web",
        [python, "-m", "gunicorn", "console.asgi:application", "--bind", f"127.0.0.1:{port}",
         "--worker-class", "uvicorn_worker.UvicornWorker",
         "--workers", config.env_str("WEB_WORKERS", "2"), "--graceful-timeout", "10", *access],
    )  # fmt: skip
    children.start(
        "worker",
        [python, "-m", "celery", "-A", "console", "worker",
         "--concurrency", config.env_str("WORKER_CONCURRENCY", "2"), "--without-gossip",
         "--without-mingle", "--loglevel", celery_level],
    )  # fmt: skip
    children.start(
        "beat",
        [python, "-m", "celery", "-A", "console", "beat", "--loglevel", celery_level,
         "--schedule", str(var_dir / "celerybeat-schedule")],
    )  # fmt: skip


def _watch(children: Children, var_dir: Path, stopping: threading.Event) -> None:
    """Until asked to stop or one of the three exits: keep the embedded servers up."""
    keeper = Keeper(var_dir)
    while not stopping.is_set():
        gone = children.exited()
        if gone:
            # A child that dies (the Celery worker can, on a broker connection lost at the
            # wrong moment) is started again, as the embedded servers are; one that keeps
            # dying ends `make run` with the reason.
            if children.restart(gone[0]):
                say(f"{gone[0]} exited with code {gone[1]}: starting it again")
                continue
            say(
                f"{gone[0]} exited with code {gone[1]}, {RESTARTS_PER_MINUTE} times in a "
                "minute: stopping the others"
            )
            break
        keeper.check()
        stopping.wait(0.5)


class Keeper:
    """Starts the embedded PostgreSQL or Redis again when one dies (killed, out of memory):
    the web server, worker and beat reconnect by themselves, so pages and tasks come back
    without anyone restarting `make run`."""

    def __init__(self, var_dir: Path) -> None:
        self.var_dir = var_dir
        self.down_since: dict[str, float] = {}

    def check(self) -> None:
        self._keep("PostgreSQL", embedded.database_down, embedded.restart_database)
        self._keep("Redis", embedded.broker_down, lambda: embedded.restart_broker(self.var_dir))

    def _keep(self, what: str, down, restart) -> None:
        if what not in self.down_since:
            if not down():
                return
            say(f"{what} (embedded) stopped: starting it again")
            self.down_since[what] = time.monotonic()
        try:
            restart()
        except Exception as exc:  # its last processes may still be ending: try again soon
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            say(f"{what} (embedded) did not start yet ({first}); trying again")
            return
        took = time.monotonic() - self.down_since.pop(what)
        say(f"{what} (embedded) restarted after {took:.1f}s")


def _attempts(count: int) -> str:
    return "1 job attempt keeps" if count == 1 else f"{count} job attempts keep"


def _say_what_keeps_running() -> None:
    """Jobs on the local backend outlive the console, as they would a cluster's: say so,
    since here they share this machine."""
    from django.conf import settings

    if settings.EXECUTION_BACKEND != "local":
        return
    from django.utils.module_loading import import_string

    running = import_string(settings.STILL_RUNNING)()
    if running:
        say(
            f"{_attempts(len(running))} running on this machine ({', '.join(running)}); "
            "the next `make run` follows them again. Stop them from their pages."
        )


if __name__ == "__main__":
    main()
