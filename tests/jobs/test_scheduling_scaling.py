"""The worker's admission pass grows no faster than its queue (issue: scale).

Counted, not timed: the calls into the scheduling core during the pass the worker runs
after a running job ended early (the digest of the pass before given, as the worker keeps
it), at 2,000 and at 8,000 queued on 1,000 nodes (the benchmark's data). Four times the
queue may cost at most six times the calls. (The first pass over a queue, with no plan
before it, is not held to this: it searches every job into a fuller cluster the longer
the queue, see docs/architecture.md.)
"""

from __future__ import annotations

import random
import sys
from math import inf
from pathlib import Path

from jobs.scheduling import passes
from tests.bench.scaling import after
from tests.bench.scheduler_core import uniform

CORE = str(Path(passes.__file__).parent)
TOOL = sys.monitoring.PROFILER_ID


def _worker_state(size: int):
    """What the worker holds after a first pass over ``size`` queued: nodes, the admitted
    jobs running, the others waiting, and that pass's reservations and digest."""
    now = 1_000_000.0
    nodes, queued = uniform(1_000, size, random.Random(5), now)
    first = passes.schedule(nodes, [], queued, now, fresh=inf)  # the whole queue planned
    running, waiting = after(first, queued)
    return now, nodes, running, waiting, first.reservations, first.digest


def _calls(action) -> int:
    """Calls into the scheduling core while ``action()`` runs."""
    calls = 0

    def count(code, offset):
        nonlocal calls
        if not code.co_filename.startswith(CORE):
            return sys.monitoring.DISABLE
        calls += 1
        return None

    sys.monitoring.use_tool_id(TOOL, "pass-calls")
    try:
        sys.monitoring.register_callback(TOOL, sys.monitoring.events.PY_START, count)
        sys.monitoring.set_events(TOOL, sys.monitoring.events.PY_START)
        action()
    finally:
        sys.monitoring.set_events(TOOL, 0)
        sys.monitoring.register_callback(TOOL, sys.monitoring.events.PY_START, None)
        sys.monitoring.free_tool_id(TOOL)
        sys.monitoring.restart_events()
    return calls


def _calls_of_the_pass_after_an_early_end(size: int) -> int:
    now, nodes, running, waiting, committed, digest = _worker_state(size)
    rest = running[1:]
    return _calls(
        lambda: passes.schedule(nodes, rest, waiting, now + 60, committed, previous=digest)
    )


def test_the_pass_after_a_change_grows_linearly_with_the_queue():
    small = _calls_of_the_pass_after_an_early_end(2_000)
    large = _calls_of_the_pass_after_an_early_end(8_000)
    assert small > 10_000  # the pass was counted
    assert large / small < 6, f"{small:,} calls at 2,000 queued, {large:,} at 8,000"


def test_a_queue_planned_afresh_from_its_middle_costs_no_more_with_the_digest():
    # A third down the queue a job lost its reservation (its node changed, say): it and
    # every job behind it are planned afresh, and all the room their reservations held is
    # given back while the third before them is checked against it. Checked entry by
    # entry, that cost a pass at 10,000 queued over a minute and a half.
    now, nodes, running, waiting, committed, digest = _worker_state(2_000)
    lost = waiting[len(waiting) // 3].id
    kept = {job_id: r for job_id, r in committed.items() if job_id != lost}
    spared = _calls(
        lambda: passes.schedule(nodes, running, waiting, now + 1, kept, previous=digest)
    )
    searched = _calls(lambda: passes.schedule(nodes, running, waiting, now + 1, kept))
    assert spared < 1.2 * searched, f"{spared:,} calls with the digest, {searched:,} without"
