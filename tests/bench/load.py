"""The console under load as `make run` starts it on a bare machine (embedded PostgreSQL and
Redis, two web workers): 50 logged-in users over the pages people use most
(tests/load's mix, each user as fast as the answers come) for a minute, after 5 s of
warm-up.

Figures: requests/s, latency per kind of page, answers of 500 and above (there must be
none), the database connections seen against the server's limit, and the web workers'
memory before and after.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

from tests.load import ConsoleUnderTest, LoadError, run_load

USERS = 50
SECONDS = 60
WARMUP_SECONDS = 5


def under_load():
    folder = Path(tempfile.mkdtemp(prefix="console-bench-"))
    try:
        with ConsoleUnderTest(folder) as console:
            return _measure(console)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _measure(console: ConsoleUnderTest):
    try:
        # The first requests fill caches, plans and connections: not what is measured.
        run_load(console.base, USERS, WARMUP_SECONDS)
        rss_start = console.web_rss_mib()
        result = run_load(console.base, USERS, SECONDS, sampler=console.gauges)
    except LoadError as exc:  # the console refused its users: that is the figure
        said = [line for line in console.output().splitlines() if "rror" in line]
        for line in said[-3:]:  # the console's own words for it
            print(f"  {line[:300]}", file=sys.stderr)
        return [("load: did not run", f"{exc} (database connections then: {_count(console)})")]
    rss_end = console.web_rss_mib()
    allowed, reserved = console.connection_limits()
    bound = re.search(r"Database connections: at most (\d+)", console.output())
    for sample in result.server_errors()[:5]:
        print(f"  {sample.status} {sample.kind} {sample.path}", file=sys.stderr)
    connections = [count for _at, count in result.gauge("connections")]
    pool = f", the console's bound {bound[1]}" if bound else ""
    failures = len(result.failures())
    return [
        (f"load: {USERS} users for {SECONDS} s, requests/s",
         f"{result.requests_per_second:.1f} ({len(result.samples)} requests)"),
        ("load: latency, every request", result.figure()),
        *((f"load: latency, {kind}", result.figure(kind)) for kind in result.kinds()),
        ("load: answers >= 500 (must be 0)", str(len(result.server_errors()))),
        ("load: requests without an answer (refused, timed out)", str(failures)),
        ("load: statuses", ", ".join(f"{k}: {n}" for k, n in result.statuses().most_common())),
        ("load: database connections, most seen",
         f"{max(connections, default=0)} (max_connections {allowed}, {reserved} reserved{pool})"),
        ("load: web workers' RSS, start -> end", f"{rss_start:.0f} MiB -> {rss_end:.0f} MiB"),
    ]  # fmt: skip


def _count(console: ConsoleUnderTest) -> str:
    try:
        return str(console.connection_count())
    except Exception as exc:  # the server may be what failed
        return f"not read ({type(exc).__name__})"
