"""Execution on the local backend, through a real Celery worker process: submit -> running
for a free one-node job, how soon a log line shows on the page, and the worker's memory over
100 short jobs."""

from __future__ import annotations

import contextlib
import os
import re
import statistics
import tempfile
import threading
import time
from pathlib import Path

from tests.bench.harness import bench_database, p50_p95, stop_group

TICKER = """
import sys, time
for i in range(int(sys.argv[1])):
    print(f"tick {time.time():.3f}", flush=True)
    time.sleep(float(sys.argv[2]))
"""


@contextlib.contextmanager
def _worker(folder: Path):
    """``make run``'s worker (prefork, 2 processes) on the bench database and folders, with
    beat's sync task sent every second from a thread of this process."""
    from django.conf import settings

    from console.celery import app
    from jobs.tasks import sync_runs
    from tests.helpers import start_worker_process

    app.conf.task_default_queue = f"bench-{os.getpid()}"
    settings.RUNS_DIR = folder / "runs"
    settings.STORAGE_ROOT = folder / "storage"
    process = start_worker_process("--concurrency", "2")
    done = threading.Event()

    def beat():
        while not done.wait(1.0):
            sync_runs.delay()

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield process
    finally:
        done.set()
        thread.join()
        stop_group(process)
        app.control.purge()


def _setup():
    from django.conf import settings
    from django.contrib.auth.models import User

    from console.models import Membership, Project
    from resources.models import Algorithm, Image, Node, NodeSpec

    user = User.objects.create_user("alice", password="x")
    project = Project.objects.create(name="Vision", slug="vision")
    Membership.objects.create(project=project, user=user)
    Node.objects.create(name="bench-node", cpu_millicores=64000, memory_mib=256 * 1024)
    spec = NodeSpec.objects.create(name="cpu-1", cpu_millicores=1000, memory_mib=1024)
    image = Image.objects.create(name="py", reference="r/py:1", scopes=["training"])
    algorithm = Algorithm.objects.create(
        name="ticker", owner=user, project=project, path="alice/ticker"
    )
    source = settings.STORAGE_ROOT / algorithm.path
    source.mkdir(parents=True)
    (source / "tick.py").write_text(TICKER)
    return user, project, spec, image, algorithm


def _submit(setup, name: str, lines: int, pause: float):
    from django.db import transaction

    from jobs import hooks, permissions
    from jobs.models import Job, JobSpecChoice
    from resources.catalog.storage import personal_folder

    user, project, spec, image, algorithm = setup
    with transaction.atomic():
        job = Job.objects.create(
            name=name, owner=user, project=project, image=image, algorithm=algorithm,
            command=f"python3 /workspace/algorithm/tick.py {lines} {pause}",
            output_path=f"{personal_folder(user)}/outputs/{name}", duration_hours=1,
            graceful_shutdown_seconds=1,
        )  # fmt: skip
        JobSpecChoice.objects.create(job=job, spec=spec, order=0)
        permissions.grant(job)
        transaction.on_commit(hooks.queue_changed)  # as the form's submit does
    return job


def _wait(job, phases, timeout: float = 60) -> float:
    from jobs.models import Job

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if Job.objects.filter(pk=job.pk, phase__in=phases).exists():
            return time.monotonic()
        time.sleep(0.02)
    job.refresh_from_db()
    raise RuntimeError(f"{job.name} did not reach {phases} in {timeout}s: {job.phase} {job.reason}")


def _tree_rss_mib(pid: int) -> float:
    import psutil

    root = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / 2**20


def _log_latencies(client, job, seconds: float) -> list[float]:
    """Follow the job's log as the page does (a request every second, from the offset the
    last answer gave) and time each line from its writing to its arrival."""
    from django.urls import reverse

    url = reverse("job_logs_more", args=[job.pk]) + "?attempt=1&offset={}"
    offset, latencies = 0, []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        body = client.get(url.format(offset)).content.decode()
        arrived = time.time()
        latencies += [(arrived - float(t)) * 1000 for t in re.findall(r"tick (\d+\.\d+)", body)]
        offset = int(re.search(r"offset=(\d+)", body).group(1)) if "offset=" in body else offset
        time.sleep(1.0)
    return latencies


def execution():
    folder = Path(tempfile.mkdtemp(prefix="console-bench-"))
    folder.chmod(0o711)  # the job user passes through it to its workspace
    with bench_database(), _worker(folder) as worker:
        from django.test import Client

        from jobs.models import Job, Phase

        setup = _setup()
        results = []
        # Submit -> running, one free job at a time (each then ends within a second).
        starts = []
        for i in range(20):
            job = _submit(setup, f"start-{i}", 1, 0)
            submitted = time.monotonic()
            starts.append((_wait(job, [Phase.RUNNING, Phase.SUCCEEDED]) - submitted) * 1000)
            _wait(job, [Phase.SUCCEEDED, Phase.ERROR])
        results.append(("submit -> running, free 1-node job (real worker)", p50_p95(starts)))
        # A log line written -> in the page's follow-up answer.
        job = _submit(setup, "talker", 100, 0.3)
        _wait(job, [Phase.RUNNING])
        client = Client()
        client.force_login(setup[0])
        latencies = _log_latencies(client, job, 20)
        results.append(
            ("log line written -> visible on the page (polled every 1 s)", p50_p95(latencies)
             + f", max {max(latencies):.0f} ms"),
        )  # fmt: skip
        _wait(job, [Phase.SUCCEEDED, Phase.ERROR])
        # Worker memory over 100 short jobs, 10 at a time.
        before = _tree_rss_mib(worker.pid)
        marks = []
        for batch in range(10):
            jobs = [_submit(setup, f"short-{batch}-{i}", 2, 0.05) for i in range(10)]
            for job in jobs:
                _wait(job, [Phase.SUCCEEDED, Phase.ERROR], timeout=120)
            marks.append(_tree_rss_mib(worker.pid))
        failed = Job.objects.filter(name__startswith="short-").exclude(phase=Phase.SUCCEEDED)
        results.append(
            ("worker memory (all its processes) over 100 short jobs",
             f"{before:.0f} MiB before; after each 10: "
             + ", ".join(f"{m:.0f}" for m in marks)
             + f" MiB; growth from 10 to 100 jobs {marks[-1] - marks[0]:+.0f} MiB; "
             f"{failed.count()} of 100 not succeeded"
             + "".join(f"; {j.name}: {j.reason}" for j in failed)),
        )  # fmt: skip
        results.append(("  (median submit -> running)", f"{statistics.median(starts):.0f} ms"))
    return results
