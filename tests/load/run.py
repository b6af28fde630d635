"""Many logged-in users at once over a realistic mix of pages, and what they saw."""

from __future__ import annotations

import contextlib
import html
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import requests

from tests.bench.harness import p50_p95
from tests.load.browser import (
    TIMEOUT,
    LoadError,
    Sample,
    Stop,
    User,
    job_links,
)

DEMO_USERS = ("admin", "lead", "alice", "bob", "charlie")
SAMPLE_EVERY = 2  # seconds between two readings of the server's gauges
MAX_REQUESTS = 500_000
FOLLOW_POLLS = 3  # how many times a job page's log is asked for more, per visit

# --- the mix ----------------------------------------------------------------------------------


def _dashboard(user: User) -> None:
    user.get("dashboard", "/")


def _jobs(user: User) -> None:
    page = user.get("jobs", "/jobs/")
    if page is not None and page.status_code == 200:
        user.job_ids = job_links(page.text) or user.job_ids


def _queue(user: User) -> None:
    user.get("queue", "/queue/")


def _cluster(user: User) -> None:
    user.get("cluster", "/cluster/")


def _new(user: User) -> None:
    user.get("new", "/jobs/new/")


def _predict(user: User) -> None:
    """The prediction beside Create: htmx posts the whole form (templates/jobs/job_form.html)."""
    headers = user.htmx_headers()
    user.request("predict", "POST", "/jobs/new/predict/", data=user.form, headers=headers)


def _job(user: User) -> None:
    """A job page, then what it polls: its events while live, and its log as it grows."""
    if not user.job_ids:
        return
    pk = user.rng.choice(user.job_ids[:5])
    page = user.get("job", f"/jobs/{pk}/")
    if page is None or page.status_code != 200:
        return
    live = re.search(r'id="job-live"\s+hx-get="([^"]+)"', page.text)
    if live:
        user.get("live", html.unescape(live[1]), htmx=True)
    # A page whose log has ended shows it without following: ask for the log panel as its
    # node buttons do, so that every visit reads a log.
    log = follow_url(page.text) or _panel_url(page.text)
    for _ in range(FOLLOW_POLLS):
        if not log:
            break
        answer = user.get("log", log, htmx=True)
        if answer is None or answer.status_code != 200:
            break
        log = follow_url(answer.text)


def follow_url(page: str) -> str | None:
    """Where a log that is followed asks for more (templates/jobs/run_log_follow.html)."""
    found = re.search(r'id="log-follow"\s+hx-get="([^"]+)"', page)
    return html.unescape(found[1]) if found else None


def _panel_url(page: str) -> str | None:
    found = re.search(r'hx-get="(/jobs/\d+/logs/\?[^"]*)"', page)
    return html.unescape(found[1]) if found else None


STEPS: dict[str, Callable[[User], None]] = {
    "dashboard": _dashboard,
    "jobs": _jobs,
    "job": _job,
    "queue": _queue,
    "new": _new,
    "predict": _predict,
    "cluster": _cluster,
}
# One round of a user's visit; each user starts at another place in it.
MIX: tuple[str, ...] = ("dashboard", "jobs", "job", "queue", "new", "predict", "cluster", "job")


# --- the load ---------------------------------------------------------------------------------


@dataclass
class LoadResult:
    samples: list[Sample]
    started: float
    seconds: float
    gauges: list[tuple[float, dict]] = field(default_factory=list)

    @property
    def requests_per_second(self) -> float:
        return len(self.samples) / self.seconds if self.seconds else 0.0

    def kinds(self) -> list[str]:
        return sorted({sample.kind for sample in self.samples})

    def latencies(self, kind: str | None = None) -> list[float]:
        return [s.ms for s in self.samples if kind is None or s.kind == kind]

    def percentile(self, q: float, kind: str | None = None) -> float:
        ordered = sorted(self.latencies(kind))
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0

    def figure(self, kind: str | None = None) -> str:
        """p50 and p95 as the other benchmarks print them."""
        samples = self.latencies(kind)
        return p50_p95(samples) if samples else "no requests"

    def statuses(self) -> Counter:
        return Counter(sample.status for sample in self.samples)

    def server_errors(self) -> list[Sample]:
        """The answers of 500 and above."""
        return [s for s in self.samples if isinstance(s.status, int) and s.status >= 500]

    def failures(self) -> list[Sample]:
        """The requests that got no answer at all."""
        return [s for s in self.samples if isinstance(s.status, str)]

    def gauge(self, name: str) -> list[tuple[float, float]]:
        """(seconds since the start, value) of one gauge, readings that failed left out."""
        return [(at, values[name]) for at, values in self.gauges if name in values]


def log_in_all(base: str, count: int) -> list[User]:
    """``count`` logged-in users, the demo accounts in turn: each account logs in once, and
    its other users are its further tabs (``User.beside``: a login hashes a password)."""
    from concurrent.futures import ThreadPoolExecutor

    accounts: dict[str, User] = {}

    def logged_in(index: int) -> User:
        name = DEMO_USERS[index % len(DEMO_USERS)]
        try:
            return User(base, name, seed=index).log_in()
        except requests.RequestException as exc:
            raise LoadError(f"{name} could not log in: {exc}") from exc

    def ready(user: User) -> User:
        try:
            return user.prepare()
        except requests.RequestException as exc:
            raise LoadError(f"{user.username} could not start: {exc}") from exc

    first = min(count, len(DEMO_USERS))
    with ThreadPoolExecutor(min(count, 8)) as pool:
        for user in pool.map(logged_in, range(first)):
            accounts[user.username] = user
        crowd = [accounts[DEMO_USERS[i]] for i in range(first)] + [
            accounts[DEMO_USERS[i % len(DEMO_USERS)]].beside(seed=i) for i in range(first, count)
        ]
        return list(pool.map(ready, crowd))


def run_load(
    base: str,
    users: int | list[User],
    seconds: float,
    mix: Sequence[str] = MIX,
    sampler: Callable[[], dict] | None = None,
    max_requests: int = MAX_REQUESTS,
    until: threading.Event | None = None,
    begun: threading.Event | None = None,
    think: float = 0.0,
) -> LoadResult:
    """``users`` logged-in users, one thread each, over ``mix`` (names of :data:`STEPS`)
    for ``seconds`` (or until ``until`` is set, if sooner); ``sampler`` read every 2 s
    meanwhile. Each user takes the next step as soon as the answers come, or, with
    ``think``, after reading the page for about that many seconds (half to one and a half
    times it, drawn per step, so that the users do not move in step). ``begun`` is set once
    they are all logged in and at work. ``users`` is a count to log in here, or a crowd
    :func:`log_in_all` logged in earlier (before the console was made busy: a login is a
    password's hash, the slowest request there is, and setting up is not what the load
    measures)."""
    crowd = log_in_all(base, users) if isinstance(users, int) else users
    stopping = threading.Event()
    started = time.monotonic()
    gauges: list[tuple[float, dict]] = []
    budget = max_requests // len(crowd)
    threads = [
        threading.Thread(target=_visit, args=(user, mix, i, budget, think), daemon=True)
        for i, user in enumerate(crowd)
    ]
    if sampler is not None:
        threads.append(
            threading.Thread(target=_sample, args=(sampler, started, stopping, gauges), daemon=True)
        )
    for user in crowd:
        user.stopping = stopping
    for thread in threads:
        thread.start()
    if begun is not None:
        begun.set()
    deadline = started + seconds
    while not (until is not None and until.is_set()) and time.monotonic() < deadline:
        time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
    stopping.set()
    for thread in threads:
        thread.join(TIMEOUT * 2)
    elapsed = time.monotonic() - started
    for user in crowd:
        user.close()
    samples = sorted((s for user in crowd for s in user.samples), key=lambda s: s.at)
    return LoadResult(samples, started, elapsed, gauges)


def _visit(user: User, mix: Sequence[str], offset: int, budget: int, think: float) -> None:
    with contextlib.suppress(Stop):
        for step in _rounds(mix, offset):
            if len(user.samples) >= budget:
                return
            STEPS[step](user)
            if think and user.stopping.wait(think * user.rng.uniform(0.5, 1.5)):
                return


def _rounds(mix: Sequence[str], offset: int) -> Iterator[str]:
    position = offset % len(mix)
    while True:
        yield mix[position]
        position = (position + 1) % len(mix)


def _sample(sampler, started: float, stopping: threading.Event, gauges: list) -> None:
    while True:
        try:
            values = sampler()
        except Exception as exc:  # a server away (the fault tests) is a reading too
            values = {"error": type(exc).__name__}
        gauges.append((time.monotonic() - started, values))
        if stopping.wait(SAMPLE_EVERY):
            return
