"""Shared pieces of the benchmarks: a throwaway database and timing statistics."""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def django_ready() -> None:
    """Django set up (its apps loaded), for a benchmark run on its own: the models' modules
    cannot be imported before."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    import django

    django.setup()


@contextmanager
def bench_database() -> Iterator[None]:
    """Django set up on a fresh test database (created, migrated, dropped afterwards)."""
    django_ready()
    from django.conf import settings
    from django.test.utils import setup_databases, teardown_databases

    # Not setup_test_environment(): it instruments template rendering, which would inflate
    # every page's time. The test client only needs its host name allowed.
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    old = setup_databases(verbosity=0, interactive=False)
    from console import heap

    heap.freeze_start_up()  # as the web process does once started (console/asgi.py)
    try:
        yield
    finally:
        teardown_databases(old, verbosity=0)


def timings(action: Callable[[], object], runs: int, warmup: int = 3) -> list[float]:
    """Wall times of ``action`` in milliseconds."""
    for _ in range(warmup):
        action()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def p50_p95(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered):.1f} ms, p95 {p95:.1f} ms ({len(ordered)} runs)"


def stop_group(process: subprocess.Popen, seconds: float = 30) -> None:
    """Stop a process started in a session of its own, with everything it started: SIGTERM
    to the group, SIGKILL if it has not ended after ``seconds``."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
