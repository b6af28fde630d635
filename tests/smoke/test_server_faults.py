"""`make run`'s embedded PostgreSQL, then its embedded Redis, killed outright under load: the
supervisor starts each again, pages come back by themselves within half a minute, meanwhile
they answer 200 or "busy, try again" (503 with Retry-After), never an error page; and every
job submitted before and after ends once."""

import contextlib
import os
import signal
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from tests.helpers import wait_until
from tests.load import ConsoleUnderTest, Sample, User, run_load

pytestmark = pytest.mark.slow

USERS = 16
BACK_WITHIN = 30  # seconds from a kill to pages answering again
LOAD_BOUND = 150  # seconds: the load ends earlier, when the test is done with it
JOB_WITHIN = 45  # seconds for a job of `sleep 2` to be admitted and end


def kill_and_wait(what: str, prober: User, pid_of) -> tuple[float, float]:
    """SIGKILL an embedded server: when it was killed, and how long until it was back."""
    old = pid_of()
    assert old is not None, f"the embedded {what}'s process was not found"
    os.kill(old, signal.SIGKILL)
    killed = time.monotonic()
    return killed, wait_until_back(what, prober, pid_of, old, killed)


def wait_until_back(what: str, prober: User, pid_of, old_pid: int, killed: float) -> float:
    """Seconds from the kill until the server runs again (a new process) and /jobs/ answers
    200 to a logged-in user."""
    while time.monotonic() - killed < BACK_WITHIN:
        answer = prober.get("probe", "/jobs/")
        if answer is not None and answer.status_code == 200 and pid_of() not in (None, old_pid):
            return time.monotonic() - killed
        time.sleep(0.5)
    seen = Counter(s.status for s in prober.samples if s.at >= killed)
    raise AssertionError(
        f"{what} not back {BACK_WITHIN} s after the kill: its process {pid_of()} (killed "
        f"{old_pid}); /jobs/ answered {dict(seen)}"
    )


def acceptable(sample: Sample) -> bool:
    """200 (or a poll's 204), or the busy page that says when to try again."""
    return sample.status in {200, 204} or (sample.status == 503 and bool(sample.retry_after))


def rows_by_name(console: ConsoleUnderTest, names: list[str]) -> dict[str, list[str]]:
    """Each job's rows (their phases) by name, read from the database."""
    sql = "SELECT name, phase FROM jobs_job WHERE name = ANY(%s)"
    for _ in range(10):
        try:
            rows = console.query(sql, names)
            break
        except psycopg.OperationalError:  # the server starting again: asked again in a second
            time.sleep(1)
    else:
        rows = console.query(sql, names)
    found: dict[str, list[str]] = {}
    for name, phase in rows:
        found.setdefault(name, []).append(phase)
    return found


def succeeded(console: ConsoleUnderTest, names: list[str]) -> bool:
    found = rows_by_name(console, names)
    return all(found.get(name) == ["succeeded"] for name in names)


def wait_for(condition) -> bool:
    with contextlib.suppress(AssertionError):  # the test says what is missing
        return wait_until(condition, JOB_WITHIN, 1)
    return False


def test_pages_and_jobs_come_back_after_the_servers_die(tmp_path):
    with ConsoleUnderTest(tmp_path) as console:
        alice = User(console.base, "alice").log_in()
        prober = User(console.base, "bob").log_in()
        names = [f"before-{i}" for i in range(3)]
        for name in names:
            alice.submit_job(name)
        begun, done = threading.Event(), threading.Event()
        with ThreadPoolExecutor(1) as pool:
            load = pool.submit(run_load, console.base, USERS, LOAD_BOUND, until=done, begun=begun)
            try:
                wait_until(lambda: begun.is_set() or load.done(), 60)
                time.sleep(3)  # the users at work

                db_killed, db_back = kill_and_wait("PostgreSQL", prober, console.postgres_pid)
                for name in ("after-database-0", "after-database-1"):
                    alice.submit_job(name)
                    names.append(name)
                time.sleep(3)

                _killed, broker_back = kill_and_wait("Redis", prober, console.redis_pid)
                # Admission runs from beat through the broker: a job sent now starts and ends.
                alice.submit_job("after-broker")
                names.append("after-broker")
                started_after = wait_for(lambda: succeeded(console, ["after-broker"]))
            finally:
                done.set()
            result = load.result()
        wait_for(lambda: succeeded(console, names))
        found = rows_by_name(console, names)
        output = console.output()

    lines = output.splitlines()
    answers = result.samples + prober.samples
    during_db = [s for s in answers if db_killed <= s.at <= db_killed + db_back]
    print(
        f"\nfaults: PostgreSQL back in {db_back:.1f} s "
        f"({sum(s.status == 503 for s in during_db)} of {len(during_db)} answers 503 meanwhile), "
        f"Redis back in {broker_back:.1f} s; {len(result.samples)} requests under load, "
        f"statuses {dict(result.statuses())}; left running after Ctrl-C: {console.left_running}"
        f"; started in {console.start_seconds:.0f} s, stopped in {console.stop_seconds:.0f} s"
    )
    print("\n".join(line for line in lines if "restarted" in line))
    wrong = [s for s in answers if not acceptable(s)]
    assert not wrong, wrong[:10]
    assert started_after, f"the job sent after Redis came back did not run: {found}"
    assert found == {name: ["succeeded"] for name in names}, found
    for server in ("PostgreSQL", "Redis"):
        assert any(
            line.startswith(f"console | {server}") and "restarted" in line for line in lines
        ), f"no restart of {server} said:\n{console.tail()}"
