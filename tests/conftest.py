"""Fixtures every test may use: named actors, a real Celery worker, a clean cache.

The actors follow one story: alice and bob work in *vision*, lead leads it, charlie works in
*speech* only (an outsider to vision) and admin is a platform admin in no project.
"""

from __future__ import annotations

import socket
import uuid
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.utils import translation

from console.models import Role
from tests.factories import PASSWORD, MembershipFactory, ProjectFactory, UserFactory
from tests.helpers import end_other_sessions, live_session
from tests.resources.factories import AcceleratorModelFactory, NodeFactory, NodeSpecFactory
from tests.resources.test_local_runner_helpers import running

# The fake Kubernetes cluster's fixtures (``fake``, ``cluster``), for the job and browser tests.
pytest_plugins = ["tests.jobs.k8s_cluster"]


@pytest.fixture(autouse=True)
def _isolated(settings, tmp_path):
    # The named actors are created in almost every test: real password hashing would
    # dominate the suite's time. Login tests still go through the real check.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Catalog folders and job directories go to a temporary place, never to var/.
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.STORAGE_ROOT.mkdir()
    settings.NODE_CACHE_DIR = tmp_path / "node-cache"


# The seed's precheck thresholds (32 GB free on root and cache) are an admin's setting for
# real nodes; a test machine may have less. Tests of the prechecks set their own.
SMALL_PRECHECKS = {"precheck_root_gb": 0, "precheck_shm_gb": 0, "precheck_cache_gb": 0}


@pytest.fixture(autouse=True)
def _small_prechecks(monkeypatch):
    from dataclasses import replace

    from console import limits

    changed = tuple(
        replace(limit, default=SMALL_PRECHECKS.get(limit.name, limit.default))
        for limit in limits.LIMITS
    )
    monkeypatch.setattr(limits, "LIMITS", changed)


@pytest.fixture(autouse=True)
def _clean_cache():
    from jobs.admission import prediction

    # The cache and the process's queue plan must not carry one test's rows into the next.
    _clear_cache()
    prediction.forget_schedule()
    # A request in Chinese leaves its language active in this thread: start each test afresh.
    translation.activate("en")
    yield
    _clear_cache()
    prediction.forget_schedule()


@pytest.fixture
def password() -> str:
    return PASSWORD


@pytest.fixture
def vision(db):
    return ProjectFactory(slug="vision", name="Vision")


@pytest.fixture
def speech(db):
    return ProjectFactory(slug="speech", name="Speech")


@pytest.fixture
def alice(vision):
    return MembershipFactory(project=vision, user=UserFactory(username="alice")).user


@pytest.fixture
def bob(vision):
    return MembershipFactory(project=vision, user=UserFactory(username="bob")).user


@pytest.fixture
def lead(vision):
    return MembershipFactory(project=vision, user=UserFactory(username="lead"), role=Role.LEAD).user


@pytest.fixture
def charlie(speech):
    return MembershipFactory(project=speech, user=UserFactory(username="charlie")).user


@pytest.fixture
def admin(db):
    return UserFactory(username="admin", is_staff=True, is_superuser=True)


@pytest.fixture
def actors(alice, bob, lead, charlie, admin):
    """Every kind of actor SPEC P tells apart, around things alice owns in vision."""
    return {
        "owner": alice,
        "member": bob,
        "lead": lead,
        "outsider": charlie,
        "admin": admin,
        "anonymous": None,
    }


@pytest.fixture
def http(live_server):
    """``http(user)``: a session against the live server logged in as ``user`` (anonymous
    without one); every session it opened is closed at the end."""
    # The server writes a response's head and body apart: without this, Nagle's algorithm
    # holds a small body back until the client's delayed ACK (40 ms a request on Linux).
    # Accepted sockets inherit it from the listening one.
    live_server.thread.httpd.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    opened = []

    def open_session(user=None):
        opened.append(live_session(live_server.url, user))
        return opened[-1]

    yield open_session
    for session in opened:
        session.close()


@pytest.fixture
def celery_worker(transactional_db):
    """A real Celery worker (in a thread of this process) on the real broker, for this test
    only: a worker left running after its test would take the tasks of the tests after it
    (an admission pass a requeue asks for, say) while they drive those steps themselves.

    The worker reads committed rows only, hence ``transactional_db``.
    """
    from celery.contrib.testing.worker import start_worker

    from console.celery import app

    # Tasks enqueued by earlier tests (whose rows are gone) must not run in this one.
    app.control.purge()
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30) as worker:
        yield worker


def _static_files_found_once() -> None:
    """Django's test client builds the middleware afresh for every test, and WhiteNoise's
    then lists and stats every static file again (a quarter of a short test's time). The
    files do not change during a run: the first listing serves every later one."""
    from whitenoise.middleware import WhiteNoiseMiddleware

    listing = WhiteNoiseMiddleware.add_files_from_finders
    found: dict = {}

    def add_files_from_finders(self):
        if not found:
            listing(self)
            found.update(self.files)
        else:
            self.files.update(found)

    WhiteNoiseMiddleware.add_files_from_finders = add_files_from_finders


def _flush_by_delete() -> None:
    """After each test that commits (a live server's, a worker's), pytest-django empties
    every table with one TRUNCATE of all sixty: about 125 ms on PostgreSQL, however little
    the test wrote. DELETE of the few rows there are takes a few milliseconds; the foreign
    keys Django makes are deferred to the commit, when every table is empty, so the order
    does not matter. The statement triggers fire for DELETE as for TRUNCATE.

    The content types and permissions stay: they are the same in every test, and the flush's
    post_migrate signal made them all again (twice the time of the flush itself); it now
    finds them there."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush
    kept = {"django_content_type", "auth_permission"}

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or allow_cascade or not tables:
            return truncate(
                self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        emptied = [table for table in tables if table not in kept]
        deletes = " ".join(f"DELETE FROM {self.quote_name(table)};" for table in emptied)
        return [f"SET CONSTRAINTS ALL DEFERRED; {deletes}"]

    DatabaseOperations.sql_flush = sql_flush


def pytest_configure(config):
    import os

    from django.conf import settings

    from console.celery import app

    _static_files_found_once()
    _flush_by_delete()

    # A queue of this run's own, so that nothing else on a shared broker (a running
    # `make run`, another test run, the other test process of this one) takes or feeds its
    # tasks.
    run = uuid.uuid4().hex[:8]
    app.conf.task_default_queue = f"tests-{run}"
    # Cache keys of this process's own too, in the processes it starts as well (the web
    # server, a worker): they share the broker's Redis with every other test process.
    prefix = f"tests-{run}"
    os.environ["CACHE_KEY_PREFIX"] = prefix
    settings.CACHES["default"]["KEY_PREFIX"] = prefix


def pytest_collection_finish(session):
    """What collection made (Django, every test module and its strategies) lives as long as
    the run: kept out of the collector's full passes, as a web process keeps its start-up
    (console/heap.py). Each full pass would walk it all again: about 5 % of a run's time."""
    import gc

    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    """The longest test files first (tests/file_seconds.py says why); each file's tests stay
    together and in their order."""
    from tests.file_seconds import load

    seconds = load()
    if seconds:
        root = config.rootpath
        weight = {}
        for item in items:
            path = item.path
            weight[path] = seconds.get(path.relative_to(root).as_posix(), 0.0)
        items.sort(key=lambda item: -weight[item.path])


def _clear_cache() -> None:
    """Empty this process's part of the cache. ``cache.clear()`` would empty the whole Redis
    database, under the feet of the other test processes sharing it."""
    backend = getattr(cache, "_cache", None)
    if backend is None or not hasattr(backend, "get_client"):  # a process-local cache
        cache.clear()
        return
    client = backend.get_client(write=True)
    keys = list(client.scan_iter(match=f"{cache.key_prefix}:*", count=1000))
    if keys:
        client.delete(*keys)


# --- jobs that really run on the local backend (tests/jobs, tests/browser) ---------------


@pytest.fixture
def local_runs(settings, tmp_path):
    """The local backend's runs folder under tmp_path; whatever a test leaves running is
    killed at its end."""
    with running(tmp_path) as found:
        settings.RUNS_DIR = found.root
        yield found


@pytest.fixture
def asgi_web(local_runs, transactional_db):
    """The web server as `make run` starts it (gunicorn with an ASGI worker: the tools' proxy
    and the terminal's WebSocket need it), on this test's database and runs folder; yields
    its base URL. What it starts on the local backend is killed by ``local_runs``."""
    from tests.helpers import free_port, start_web_process

    process = start_web_process(free_port())
    try:
        yield f"http://127.0.0.1:{process.port}"
    finally:
        process.terminate()
        process.wait(20)


@pytest.fixture
def run_cluster(transactional_db):
    """Two nodes of two boards and a CPU node; specs to match."""
    model = AcceleratorModelFactory(name="Demo-GPU")
    for name in ("node-a", "node-b"):
        NodeFactory(name=name, board_count=2, accelerator_model=model)
    NodeFactory(name="node-cpu")
    return {
        "cpu": NodeSpecFactory(name="cpu-1", cpu_millicores=1000, memory_mib=1024),
        "gpu": NodeSpecFactory(
            name="gpu-1", cpu_millicores=1000, memory_mib=1024, boards=Decimal(1),
            accelerator_model=model,
        ),
    }  # fmt: skip


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """Each test process's database is a copy of one migrated template (tests/db_template)."""
    from tests.db_template import use_template

    use_template()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker, worker_id):
    """Each test process's jobs get ids far from the others'. A job's framework port comes
    from its id (jobs.launch.port_for), and the local backend's jobs of every test process
    share this machine: two TensorFlow jobs with one id, one in each process's database,
    would both listen on one port, and the second could not start. So the ports' cycle is
    cut in as many parts as there are processes, one each: their jobs stay apart as long as
    none makes a thousand more jobs than another."""
    import os

    from django.db import connection

    from jobs.launch import PORT_RANGE

    if worker_id.startswith("gw"):
        low, high = PORT_RANGE
        spacing = (high - low + 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT setval(pg_get_serial_sequence('jobs_job', 'id'), %s)",
                [1 + int(worker_id[2:]) * spacing],
            )
    yield
    with django_db_blocker.unblock():
        end_other_sessions(connection)


@pytest.fixture(scope="session")
def torch_runtime():
    """The PyTorch runtime's folder (var/, as `make run` makes it: once per machine, instant
    afterwards); tests that need it are skipped, with the reason, where it cannot be made."""
    from resources.inventory import runtimes

    result = runtimes.ensure_runtime()
    if not result.ready:
        pytest.skip(f"no PyTorch runtime: {result.status}")
    return result.folder


@pytest.fixture
def tools_runtime(runtime_folder):
    """The PyTorch runtime, which also holds TensorBoard and JupyterLab (SPEC O8, O9); its
    absence fails the test."""
    return runtime_folder("torch-cpu")


@pytest.fixture(scope="session")
def runtime_folder():
    """``runtime_folder(name)``: the folder of that runtime (resources.inventory.runtimes.RUNTIMES),
    made like `make run` makes it (once per machine). A runtime this machine cannot have
    fails the test with the reason: the tests that ask for one exist to prove it works."""
    from resources.inventory import runtimes

    def made(name: str):
        definition = runtimes.by_name(name)
        result = runtimes.ensure(definition)
        if not result.ready:
            pytest.fail(f"no {definition.framework} runtime ({name}): {result.status}")
        return result.folder

    return made


@pytest.fixture
def mpi_runtime(runtime_folder):
    """The PyTorch runtime's folder, with its MPI (Open MPI's mpirun and mpi4py, from the
    package index): what MPI jobs run with on this machine, no MPI of the machine's own."""
    from resources.inventory import runtimes

    folder = runtime_folder("torch-cpu")
    missing = runtimes.missing_extra(folder, "mpi")
    if missing is not None:
        pytest.fail(f"the PyTorch runtime has no MPI: {missing[1]}")
    return folder
