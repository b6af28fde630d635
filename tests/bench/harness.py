"""Shared pieces of the benchmarks: a throwaway database and timing statistics."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def bench_database() -> Iterator[None]:
    """Django set up on a fresh test database (created, migrated, dropped afterwards)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    import django

    django.setup()
    from django.test.utils import (
        setup_databases,
        setup_test_environment,
        teardown_databases,
        teardown_test_environment,
    )

    setup_test_environment()
    old = setup_databases(verbosity=0, interactive=False)
    try:
        yield
    finally:
        teardown_databases(old, verbosity=0)
        teardown_test_environment()


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
