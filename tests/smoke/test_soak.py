"""`make run` under a steady load for a minute while its scheduler admits and finishes jobs:
no answer of 500 or above, database connections and web memory flat, no job lost, nothing
failing in its output."""

import contextlib
import threading
import time
from collections import Counter

import pytest

from tests.helpers import wait_until
from tests.load import ConsoleUnderTest, User, log_in_all, run_load

pytestmark = pytest.mark.slow

USERS = 32
SECONDS = 70
# Seconds each user reads a page before the next click (about: tests/load/run.py draws each
# pause). The soak looks for what a minute of steady use wears out (connections, memory,
# jobs lost); the most the server answers when nobody pauses is `make bench BENCH_ARGS=load`.
# Unpaced, the soak took most of both cores for its minute (159 s of processor time alone),
# which every other test of `make test` waited on.
THINK = 2.0
FIRST_JOBS = 10
# Seconds between two jobs during the load: with the first ten, about 20 in the first minute,
# the submission limit (RATE_LIMIT_SUBMIT); one over it waits as its 429 says.
SUBMIT_EVERY = 6
WINDOW = 20  # seconds: the start and the end of the load compared
CONNECTION_MARGIN = 4
FINISHED = ("succeeded", "error", "stopped", "expired")


def keep_submitting(alice: User, names: list[str], stop: threading.Event, errors: list) -> None:
    # On a schedule: a submission that takes a while under the load does not delay the next.
    due = time.monotonic() + SUBMIT_EVERY
    while not stop.wait(max(0.0, due - time.monotonic())):
        due += SUBMIT_EVERY
        name = f"soak-{len(names)}"
        try:
            alice.submit_job(name)
        except Exception as exc:  # said by the test, not lost in a thread
            errors.append(f"{name}: {exc}")
        else:
            names.append(name)


def phases(console: ConsoleUnderTest, names: list[str]) -> dict[str, list[str]]:
    rows = console.query("SELECT name, phase FROM jobs_job WHERE name = ANY(%s)", names)
    found: dict[str, list[str]] = {}
    for name, phase in rows:
        found.setdefault(name, []).append(phase)
    return found


def unfinished(found: dict[str, list[str]], names: list[str]) -> dict[str, list[str] | None]:
    """The jobs without exactly one row, or whose row has not ended."""
    return {
        name: found.get(name)
        for name in names
        if len(found.get(name, ())) != 1 or found[name][0] not in FINISHED
    }


def between(gauge: list[tuple[float, float]], start: float, end: float) -> list[float]:
    return [value for at, value in gauge if start <= at <= end]


def test_a_minute_of_load_while_jobs_come_and_go(tmp_path):
    with ConsoleUnderTest(tmp_path) as console:
        # Everyone logs in while the console is quiet, before the first jobs start: a login
        # hashes a password, and five of them behind ten jobs starting on a machine busy
        # with the other test process once took longer than a request may.
        crowd = log_in_all(console.base, USERS)
        alice = next(user for user in crowd if user.username == "alice").beside(seed=-1)
        names = []
        for i in range(FIRST_JOBS):
            alice.submit_job(f"soak-{i}")
            names.append(f"soak-{i}")
        stop, submit_errors = threading.Event(), []
        submitter = threading.Thread(
            target=keep_submitting, args=(alice, names, stop, submit_errors)
        )
        submitter.start()
        try:
            result = run_load(console.base, crowd, SECONDS, sampler=console.gauges, think=THINK)
        finally:
            stop.set()
            submitter.join()
        # The last jobs were sent at the end of the load: admission every 5 s, then 2 s each.
        with contextlib.suppress(AssertionError):  # what is left is said below
            wait_until(lambda: not unfinished(phases(console, names), names), 45, 1)
        found = phases(console, names)
        allowed, reserved = console.connection_limits()
        # Before Ctrl-C: stopping makes gunicorn say "ERROR" of the workers it ends.
        output = console.output()

    connections = result.gauge("connections")
    rss = result.gauge("web_rss_mib")
    counts = [count for _at, count in connections]
    rss_after_start = next(value for at, value in rss if at >= WINDOW)
    print(
        f"\nsoak: {len(result.samples)} requests, {result.requests_per_second:.1f}/s, "
        f"p95 {result.percentile(0.95):.0f} ms; connections {min(counts)}..{max(counts)} "
        f"(max_connections {allowed}, {reserved} reserved); web RSS "
        f"{rss_after_start:.0f} MiB after {WINDOW} s -> {rss[-1][1]:.0f} MiB; "
        f"{len(names)} jobs: {dict(Counter(p for ps in found.values() for p in ps))}; "
        f"left running after Ctrl-C: {console.left_running}"
        f"; started in {console.start_seconds:.0f} s, stopped in {console.stop_seconds:.0f} s"
    )
    # Shown with a failure only (pytest keeps a passing test's output to itself): what the
    # console said while a request went unanswered (a web worker restarted, a timeout...).
    print(f"--- the console's last output ---\n{output[-6000:]}")

    assert not result.server_errors(), result.server_errors()[:10]
    assert not result.failures(), result.failures()[:10]
    assert not submit_errors, submit_errors
    assert max(counts) <= allowed - reserved, counts
    first = between(connections, 0, WINDOW)
    last = between(connections, result.seconds - WINDOW, result.seconds)
    assert first and last, result.gauges
    assert max(last) <= max(first) + CONNECTION_MARGIN, (first, last)
    assert rss[-1][1] <= rss_after_start + max(0.25 * rss_after_start, 60), rss
    assert not unfinished(found, names), unfinished(found, names)
    failing = [
        line
        for line in output.splitlines()
        if "Traceback" in line or "raised unexpected" in line or "ERROR" in line
    ]
    assert not failing, "\n".join(failing[:20])
