"""Small helpers for tests that wait on real processes or talk to the live server."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urljoin, urlsplit, urlunsplit

import requests

ROOT = Path(__file__).resolve().parents[1]


def wait_until(condition: Callable[[], object], timeout: float = 20, interval: float = 0.1):
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout}s: {condition}")
        time.sleep(interval)


@contextlib.contextmanager
def every(seconds: float, step: Callable[[], object], join: float = 30):
    """Run ``step`` every ``seconds`` in a thread while the block lasts, as beat's tasks do
    beside a test (the thread's database connection closed at its end)."""
    from django.db import connection

    done = threading.Event()

    def loop():
        try:
            while not done.wait(seconds):
                step()
        finally:
            connection.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(join)


def run_coroutine(coroutine):
    """``asyncio.run`` in a thread of its own: Playwright's sync API (the browser tests of the
    same run) keeps an event loop running in the test's thread."""
    import asyncio
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, coroutine).result()


def settings_form_data(**overrides) -> dict:
    """A whole POST of the /settings/ form: every limit at its default, plus overrides."""
    from console import limits

    data: dict = {}
    for limit in limits.LIMITS:
        value = overrides.get(limit.name, limit.default)
        if limit.kind == "bool":
            if value:
                data[limit.name] = "on"
        elif limit.kind == "int_list" and not isinstance(value, str):
            data[limit.name] = ", ".join(map(str, value))
        else:
            data[limit.name] = value
    return data


def database_url(name: str) -> str:
    """The server in use (given, or the embedded one, on its socket), with database ``name``."""
    url = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit(url._replace(path="/" + name))


def _process_env() -> dict:
    """The environment of a console process of this test run: its test database, broker,
    task queue and folders."""
    from django.conf import settings
    from django.db import connection

    return {
        **os.environ,
        "DATABASE_URL": database_url(connection.settings_dict["NAME"]),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "RUNS_DIR": str(settings.RUNS_DIR),
        "STORAGE_ROOT": str(settings.STORAGE_ROOT),
        "NODE_CACHE_DIR": str(settings.NODE_CACHE_DIR),
        "CLUSTER_LOGS_DIR": str(settings.CLUSTER_LOGS_DIR),
    }


def start_worker_process(*pool: str) -> subprocess.Popen:
    """``celery worker`` in a process (and session) of its own, on this process's test
    database, broker, task queue and folders: a worker that can be killed like a real one.
    ``pool``: its pool options, e.g. ``"--pool", "solo"``. The caller stops it."""
    from console.celery import app

    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "console", "worker", *pool,
         "--queues", app.conf.task_default_queue, "--without-gossip", "--without-mingle",
         "--loglevel", "WARNING"],
        cwd=ROOT, env=_process_env(), start_new_session=True,
    )  # fmt: skip


def start_web_process(port: int) -> subprocess.Popen:
    """The console's web server (gunicorn with one ASGI worker, as `make run` starts each of
    its web workers) on 127.0.0.1:``port``, on this test run's database. The caller stops it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "console.asgi:application", "--bind",
         f"127.0.0.1:{port}", "--worker-class", "uvicorn_worker.UvicornWorker", "--workers", "1",
         "--log-level", "warning"],
        cwd=ROOT, env={**_process_env(), "PORT": str(port)}, start_new_session=True,
    )  # fmt: skip
    wait_until(lambda: _answers(port) or process.poll() is not None, timeout=60, interval=0.2)
    if process.poll() is not None:
        raise RuntimeError(f"the web server on port {port} did not start")
    process.port = port
    return process


def other_connection():
    """A second connection to the test database, as another web or worker process has."""
    import psycopg
    from django.db import connection

    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**params)


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers(port: int) -> bool:
    import socket

    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
        return True
    return False


def check_answer(response, want, ok: int) -> None:
    """``want`` is "ok" (then ``ok`` is the status), "login" or a refusal's status code."""
    if want == "login":
        assert response.status_code == 302 and response["Location"].startswith("/login/")
    elif want == "ok":
        assert response.status_code == ok, response.status_code
    else:
        assert response.status_code == int(want), response.status_code


class LiveSession(requests.Session):
    """A ``requests`` session against the live test server: paths are relative to it."""

    def __init__(self, base_url: str):
        super().__init__()
        self.base_url = base_url

    def request(self, method, url, *args, **kwargs):
        return super().request(method, urljoin(self.base_url, url), *args, **kwargs)


def live_session(base_url: str, user=None) -> LiveSession:
    """A session logged in as ``user`` (anonymous without one), with a session of its own,
    that sends a CSRF token with every request. Close it: an open one holds a server thread
    and its database connection."""
    from django.test import Client
    from django.utils.crypto import get_random_string

    session = LiveSession(base_url)
    if user is not None:
        client = Client()
        client.force_login(user)
        session.cookies.set("sessionid", client.cookies["sessionid"].value)
    token = get_random_string(32)
    session.cookies.set("csrftoken", token)
    session.headers["X-CSRFToken"] = token
    return session


def stand_in_runtime(folder):
    """A folder that passes for an image's local runtime (bin/python is this interpreter),
    for tests of what is offered and accepted rather than of what runs. A link left there
    by another run (to another interpreter, or to one since deleted) is replaced."""
    python = Path(folder) / "bin" / "python"
    python.parent.mkdir(parents=True, exist_ok=True)
    if python.is_symlink() and os.readlink(python) == sys.executable:
        return Path(folder)
    # A new link under a name of its own, then renamed over the old one: atomic, so that two
    # test processes doing this at once both end with a working link.
    fresh = python.with_name(f".python-{os.getpid()}-{threading.get_ident()}")
    fresh.unlink(missing_ok=True)
    fresh.symlink_to(sys.executable)
    os.replace(fresh, python)
    return Path(folder)


def give_images_runtimes(folder) -> None:
    """Every image without a local runtime gets the stand-in one in ``folder``, as `make
    run` gives the demo images theirs, whether or not this machine has made them yet."""
    from resources.models import Image

    runtime = str(stand_in_runtime(folder))
    Image.objects.filter(local_runtime="").update(local_runtime=runtime)


def end_other_sessions(connection, only: list[int] | None = None) -> None:
    """End what is still connected to the test database before it is dropped (``only``:
    those sessions): a thread of a test (a server's, a worker's) may leave its connection
    open when it ends, and the drop then failed ("is being accessed by other users"),
    leaving the database behind for the next run. Each one ended is named in a warning,
    with the last statement it ran."""
    import warnings

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid), application_name, left(query, 120) "
            "FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND (%s::int[] IS NULL OR pid = ANY(%s::int[]))",
            [only, only],
        )
        for _ended, application, query in cursor.fetchall():
            warnings.warn(f"a session left open ({application or 'no name'}): {query}",
                          stacklevel=1)  # fmt: skip
    connection.close()
