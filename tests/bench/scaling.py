"""How the admission pass grows with the queue: ``make bench BENCH_ARGS=scaling``.

The pure core's pass over 1,000, 10,000 and 30,000 queued gang jobs on 1,000 nodes (the data
mix of the database benchmarks: one model, 8 boards a node, specs of 1-8 boards, 1-16 nodes
a job), each size in a process of its own so that its peak memory is its own: the first
pass (which plans core.FRESH jobs), the passes that plan the rest of the queue, the next
one given the last one's reservations, digest and profile (what the worker does every few
seconds once something changed: see jobs.scheduling.warm), the one after a job more was
submitted, then the one after a running job ended early (each from the last
one's profile), the peak resident memory, and a draft's prediction from the plan. Each line
names its target. The database's part of a pass (its writes, the skip of a pass when
nothing changed) is in ``make bench BENCH_ARGS="admission prediction"``.
"""

from __future__ import annotations

import json
import random
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import replace

SIZES = (1_000, 10_000, 30_000)
NODES = 1_000
# The targets for a pass, in seconds, per queue size: (a pass that changes the plan: the
# first, one planning the next part of the queue, one after a submit or an early end; the
# next pass when nothing changed).
TARGETS = {1_000: (0.1, 0.1), 10_000: (1.0, 0.3), 30_000: (3.0, 1.0)}


def after(first, queued) -> tuple[list, list]:
    """What the worker holds between passes: the jobs ``first`` admitted running (to their
    end at the latest), the others waiting with their reservations."""
    from jobs.scheduling.data import RunningJob

    durations = {job.id: job.duration for job in queued}
    running = [RunningJob(a.job_id, first.now + durations[a.job_id], a.placements)
               for a in first.admissions]  # fmt: skip
    admitted = {a.job_id for a in first.admissions}
    return running, [job for job in queued if job.id not in admitted]


def measure(size: int) -> dict:
    """One size, in this process (the subprocess's side)."""
    from jobs.scheduling import passes
    from jobs.scheduling.predict import predict
    from tests.bench.scheduler_core import uniform

    now = 1_000_000.0
    nodes, queued = uniform(NODES, size, random.Random(5), now)
    started = time.perf_counter()
    first = passes.schedule(nodes, [], queued, now)
    first_s = time.perf_counter() - started
    running, waiting = after(first, queued)
    # The passes that plan the rest of the queue, core.FRESH jobs each (the worker asks for
    # each one as the last ends), up to the one that finds every job planned.
    catching_up, plan, first = [], first, None
    while True:
        committed, digest, warm = plan.reservations, plan.digest, plan.hand_over()
        plan = None  # one plan alive at a time, as in the worker
        started = time.perf_counter()
        plan = passes.schedule(nodes, running, waiting, now, committed, previous=digest,
                               warm=warm)  # fmt: skip
        catching_up.append(time.perf_counter() - started)
        if not plan.unplanned:
            break
    rng, times = random.Random(9), []
    for _ in range(30):
        draft = replace(uniform(NODES, 1, rng, now)[1][0], id=0, submitted_at=now)
        started = time.perf_counter()
        predict(nodes, running, waiting, draft, now, schedule=plan)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    committed, digest, warm = plan.reservations, plan.digest, plan.hand_over()
    del plan
    started = time.perf_counter()
    second = passes.schedule(nodes, running, waiting, now, committed, previous=digest,
                             warm=warm)  # fmt: skip
    next_s = time.perf_counter() - started
    # A job more, submitted a second later at the normal priority: the end of the queue.
    newcomer = replace(
        uniform(NODES, 1, random.Random(7), now)[1][0], id=size + 1, priority=0,
        submitted_at=now + 1,
    )  # fmt: skip
    waiting = [*waiting, newcomer]
    started = time.perf_counter()
    third = passes.schedule(nodes, running, waiting, now + 1, second.reservations,
                            previous=second.digest, warm=second.hand_over())  # fmt: skip
    submitted_s = time.perf_counter() - started
    del second
    # Then a running job ends early: the reservations behind it move earlier in a cascade,
    # a pass taking its share of the searches (core.COMPRESSIONS).
    started = time.perf_counter()
    passes.schedule(nodes, running[1:], waiting, now + 60, third.reservations,
                    previous=third.digest, warm=third.hand_over())  # fmt: skip
    ended_s = time.perf_counter() - started
    return {
        "first": first_s,
        "catch_up_passes": len(catching_up),
        "catch_up_max": max(catching_up),
        "catch_up": [round(t, 2) for t in catching_up],
        "planned_after": first_s + sum(catching_up),
        "next": next_s,
        "submitted": submitted_s,
        "ended": ended_s,
        "admitted": len(running),
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "predict_p50": statistics.median(times),
        "predict_p95": times[int(len(times) * 0.95) - 1],
    }


def scaling() -> list[tuple[str, str]]:
    from jobs.scheduling.core import FRESH, FRESH_SHARE

    figures = []
    for size in SIZES:
        out = subprocess.run(
            [sys.executable, "-m", "tests.bench.scaling", str(size)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        m = json.loads(out.stdout.strip().splitlines()[-1])
        first, then = TARGETS[size]
        figures += [
            (
                f"scaling: pass over {size:,} queued on {NODES:,} nodes, first / next",
                f"{m['first']:.2f} s / {m['next']:.2f} s ({m['admitted']} admitted; "
                f"target ≤ {first:g} s / ≤ {then:g} s)",
            ),
            (
                f"scaling:   passes until every job is planned "
                f"({max(FRESH, size // FRESH_SHARE):,} more each), "
                f"{size:,} queued",
                f"{m['catch_up_passes']} more, the longest {m['catch_up_max']:.2f} s (≤ "
                f"{first:g} s); every job planned {m['planned_after']:.1f} s of passes after "
                "the first began",
            ),
            (
                f"scaling:   the pass after one more job is submitted, {size:,} queued",
                f"{m['submitted']:.2f} s (≤ {first:g} s, a pass that changes the plan)",
            ),
            (
                f"scaling:   the pass after a running job ended early, {size:,} queued",
                f"{m['ended']:.2f} s (≤ {first:g} s, a pass that changes the plan)",
            ),
            (f"scaling:   peak memory, {size:,} queued", f"{m['peak_mb']:.0f} MB (≤ 500 MB)"),
            (
                f"scaling:   a draft's prediction from the plan, {size:,} queued",
                f"p50 {m['predict_p50']:.1f} ms, p95 {m['predict_p95']:.1f} ms (p95 ≤ 25 ms)",
            ),
        ]
    return figures


if __name__ == "__main__":
    from tests.bench.harness import django_ready

    django_ready()
    print(json.dumps(measure(int(sys.argv[1]))))
