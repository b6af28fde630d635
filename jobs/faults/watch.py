"""The performance and hang watch of running jobs' logs (SPEC F6; seed 000 "性能检测").

A job that asks for it prints, each iteration, ``this iteration hardware time is X and e2e
time is Y ms``. Each pass reads what its entry replicas wrote since the last pass and:

* performance: when hardware / e2e time is above the job's threshold for the admin's
  ``performance_window`` iterations in a row on one replica, the job's policy acts: an alert
  (event and email) or, with "reschedule", the same and an interruption that isolates its
  nodes and resumes it elsewhere (jobs.faults.recovery);
* hang: once a job has printed a few progress lines, no new one for ``hang_factor`` × its
  median iteration (at least ``hang_min_seconds``) is a hang, alerted or recovered from as
  its ``hang_policy`` says; progress again afterwards is said once too.

Everything an attempt's watch knows lives in ``Attempt.watch`` (offsets, the recent ratios
and iteration times, when progress was last seen, what was already said), written with one
conditional UPDATE per attempt and pass: two passes racing read the same lines, and only the
one whose UPDATE lands acts, so an alert is never sent twice.
"""

from __future__ import annotations

import copy
import logging
import math
import re
import statistics
from datetime import datetime

from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy, gettext_noop

from console import limits
from console.words import counted, said
from jobs import lifecycle
from jobs.backend import attempt_backend
from jobs.faults import alerts, diagnosis, recovery
from jobs.faults.policy import ISOLATING, Cause
from jobs.models import Attempt, Job, JobEvent, PerformancePolicy
from resources.backends.base import BackendError

log = logging.getLogger(__name__)

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
# Seed 000's wording; spaces, case and a trailing period may vary, and a prefix (a rank, a
# time stamp) may come first.
PROGRESS = re.compile(
    r"this\s+iteration\s+hardware\s+time\s+is\s+(?P<hardware>" + _NUMBER + r")\s+"
    r"and\s+e2e\s+time\s+is\s+(?P<e2e>" + _NUMBER + r")\s*ms\b",
    re.IGNORECASE,
)

READ_BYTES = 256 * 1024  # read per replica and pass: a pass stays short whatever a job prints
BEHIND_BYTES = 8 * 1024 * 1024  # further behind than this, skip to the end (old lines say little)
MAX_PARTIAL = 4096  # an unfinished line longer than this is no progress line: dropped
KEEP_E2E = 32  # iteration times kept for the median
MIN_LINES = 3  # progress lines before a silence can be a hang (start-up may take long)


# --- reading -------------------------------------------------------------------------------


def parse_line(line: str) -> tuple[float, float] | None:
    """(hardware ms, e2e ms) of a progress line, or None. Times that cannot be (negative,
    not finite, an e2e time of 0) are no progress line either."""
    match = PROGRESS.search(line)
    if match is None:
        return None
    hardware, e2e = float(match["hardware"]), float(match["e2e"])
    if not (math.isfinite(hardware) and math.isfinite(e2e)) or hardware < 0 or e2e <= 0:
        return None
    return hardware, e2e


def parse(text: str) -> list[tuple[float, float]]:
    return [pair for line in text.splitlines() if (pair := parse_line(line)) is not None]


def _read(attempt: Attempt, replica: str, state: dict) -> list[tuple[float, float]]:
    """The progress lines a replica wrote since the last pass; moves its offset on. A line
    not finished yet is kept for the next pass."""
    place = state.setdefault("logs", {}).setdefault(replica, {"at": 0, "partial": ""})
    runner = attempt_backend(attempt)
    text, after = runner.logs(attempt.workload_id, replica, place["at"], READ_BYTES)
    # A read may stop short of its window (the local backend ends it at a whole line), so
    # how far behind the log is comes from its size, not from a full window.
    if text:
        size = runner.log_size(attempt.workload_id, replica)
        if size - after > BEHIND_BYTES:
            # From the last byte written, dropping up to the next newline (None): when that
            # byte ends a line, no line after the skip is lost.
            place["at"], place["partial"] = max(size - 1, 0), None
            return []
    place["at"] = after
    partial = place["partial"]
    if partial is None:
        cut = text.find("\n")
        if cut < 0:
            return []
        text, partial = text[cut + 1 :], ""
    done, _, rest = (partial + text).rpartition("\n")
    place["partial"] = rest if len(rest) <= MAX_PARTIAL else None
    return parse(done)


# --- deciding ------------------------------------------------------------------------------


def _performance(job: Job, state: dict, replica: str, pairs, window: int) -> float | None:
    """Counts the iterations in a row above the threshold; the last ratio once a run of
    ``window`` is reached (and not said before), else None."""
    threshold = float(job.perf_threshold)
    place = state["logs"][replica]
    ratios = state.setdefault("ratios", [])
    crossed = None
    for hardware, e2e in pairs:
        ratio = round(hardware / e2e, 4)
        ratios.append(ratio)
        place["above"] = place.get("above", 0) + 1 if ratio > threshold else 0
        if place["above"] >= window and crossed is None:
            crossed = ratio
    del ratios[:-window]
    return crossed


def _hang_limit(state: dict, caps) -> float:
    median = statistics.median(state["e2e"]) / 1000 if state.get("e2e") else 0
    return max(float(caps.hang_min_seconds), caps.hang_factor * median)


def _advance(job: Job, state: dict, read: dict[str, list], now: datetime, caps) -> list[tuple]:
    """Updates ``state`` with what was read; returns what is to be said: ("performance",
    ratio), ("hang", seconds silent), ("progress", seconds it was silent)."""
    found = []
    said_before = state.setdefault("said", [])
    watches_performance = job.perf_threshold is not None and bool(job.perf_policy)
    lines = [pair for pairs in read.values() for pair in pairs]
    for replica, pairs in read.items():
        if watches_performance and pairs:
            ratio = _performance(job, state, replica, pairs, caps.performance_window)
            if ratio is not None and "performance" not in said_before:
                said_before.append("performance")
                found.append(("performance", ratio))
    if lines:
        e2e = state.setdefault("e2e", [])
        e2e.extend(round(pair[1], 3) for pair in lines)
        del e2e[:-KEEP_E2E]
        silent = now.timestamp() - state.get("progress_at", now.timestamp())
        state["lines"] = state.get("lines", 0) + len(lines)
        state["progress_at"] = now.timestamp()
        if state.pop("hung", False) and "progress" not in said_before:
            said_before.append("progress")
            found.append(("progress", silent))
    elif job.hang_policy and state.get("lines", 0) >= MIN_LINES and not state.get("hung"):
        silent = now.timestamp() - state["progress_at"]
        if silent >= _hang_limit(state, caps):
            state["hung"] = True
            if "hang" not in said_before:
                said_before.append("hang")
                found.append(("hang", silent))
    return found


# --- the pass ------------------------------------------------------------------------------


def watched():
    """The running attempts of jobs that ask for a watch: one query."""
    asks = (Q(job__perf_threshold__isnull=False) & ~Q(job__perf_policy="")) | ~Q(
        job__hang_policy=""
    )
    return (
        Attempt.objects.filter(ended_at__isnull=True, stop_cause="", state=Attempt.State.RUNNING)
        .filter(asks)
        .select_related("job__owner", "job__project")
        .order_by("pk")
    )


def watch(now: datetime | None = None) -> list[int]:
    """One pass over every watched attempt; returns the ids of those interrupted."""
    now = now or timezone.now()
    caps = None
    interrupted = []
    for attempt in watched():
        caps = caps or limits.current()
        try:
            if _watch_one(attempt, now, caps):
                interrupted.append(attempt.pk)
        except BackendError as exc:  # its backend did not answer: the next pass reads on
            # Said every few minutes, not every second (a cluster keeping no logs never will).
            if cache.add(f"fault-watch-unread-{attempt.pk}", 1, timeout=300):
                log.warning("cannot read the log of %s: %s", attempt.workload_id, exc)
    return interrupted


def _watch_one(attempt: Attempt, now: datetime, caps) -> bool:
    before = attempt.watch or {}
    state = copy.deepcopy(before)
    read = {
        r["name"]: _read(attempt, r["name"], state) for r in attempt.replicas if r.get("runs_entry")
    }
    found = _advance(attempt.job, state, read, now, caps)
    if state == before:
        return False
    with transaction.atomic():
        if not Attempt.objects.filter(pk=attempt.pk, watch=before, ended_at__isnull=True).update(
            watch=state
        ):
            return False  # another pass got there first: it acts, not this one
        attempt.watch = state
        interrupted = False
        for kind, value in found:
            interrupted = _act(attempt, kind, value, state, caps) or interrupted
    return interrupted


def _act(attempt: Attempt, kind: str, value: float, state: dict, caps) -> bool:
    job = attempt.job
    if kind == "progress":
        lifecycle.record(
            job,
            said(
                gettext_noop("Progress again after %(seconds)s s without: no longer hung."),
                seconds=round(value),
            ),
            kind=JobEvent.Kind.INFO,
            item="hang",
        )
        return False
    if kind == "performance":
        policy, cause = job.perf_policy, Cause.PERFORMANCE
        params = {"threshold": job.perf_threshold, "n": caps.performance_window, "ratio": value}
        found = said(PERFORMANCE_FOUND, **params)
    else:
        policy, cause = job.hang_policy, Cause.HANG
        median = statistics.median(state["e2e"]) / 1000 if state.get("e2e") else 0
        params = {"seconds": round(value), "median": f"{median:.3g}"}
        found = said(HANG_FOUND, **params)
    reachable = alerts.reachable(job.owner)
    isolated = []
    if policy == PerformancePolicy.RESCHEDULE:
        action = recovery.what_happens(job, cause)
        nodes = diagnosis.nodes_of(attempt)
        if not recovery.interrupt(attempt, cause, kind, nodes, found):
            return False  # already ending (stopped, expired, another fault): nothing to say
        interrupted = True
        isolated = nodes if cause in ISOLATING else []
    else:
        action = said(gettext_noop("Nothing: it keeps running (policy: alert only)."))
        told = EMAILED if reachable else NO_ADDRESS
        text = PERFORMANCE_ALERT if kind == "performance" else HANG_ALERT
        lifecycle.record(
            job, said(text, told=told, **params), kind=JobEvent.Kind.WARNING, item=kind
        )
        interrupted = False
    alerts.later(job, kind, found, action, isolated)
    return interrupted


PERFORMANCE_FOUND = counted(
    "Hardware time / e2e time was above the threshold %(threshold)s for %(n)s iteration in a "
    "row (last %(ratio)s).",
    "Hardware time / e2e time was above the threshold %(threshold)s for %(n)s iterations in a "
    "row (last %(ratio)s).",
    "n",
)
HANG_FOUND = gettext_noop(
    "No progress line for %(seconds)s s (an iteration takes %(median)s s): the job seems hung."
)
PERFORMANCE_ALERT = counted(
    "Hardware time / e2e time was above the threshold %(threshold)s for %(n)s iteration in a "
    "row (last %(ratio)s). It keeps running (policy: alert only); %(told)s.",
    "Hardware time / e2e time was above the threshold %(threshold)s for %(n)s iterations in a "
    "row (last %(ratio)s). It keeps running (policy: alert only); %(told)s.",
    "n",
)
HANG_ALERT = gettext_noop(
    "No progress line for %(seconds)s s (an iteration takes %(median)s s): the job seems hung. "
    "It keeps running (policy: alert only); %(told)s."
)
EMAILED = gettext_lazy("its owner is told by email")
NO_ADDRESS = gettext_lazy("its owner has no email address to tell")


# --- the job page --------------------------------------------------------------------------


def summary(job: Job, now: datetime | None = None) -> dict | None:
    """What the job page says of the watch of its running attempt, or None (no watch asked,
    nothing running): one query, only for a watched job."""
    if job.perf_threshold is None and not job.hang_policy:
        return None
    attempt = job.attempts.filter(ended_at__isnull=True).order_by("-number").first()
    if attempt is None:
        return None
    state = attempt.watch or {}
    ratios = state.get("ratios") or []
    progress_at = state.get("progress_at")
    now = now or timezone.now()
    return {
        "performance": job.perf_threshold is not None and bool(job.perf_policy),
        "ratio": ratios[-1] if ratios else None,
        "threshold": job.perf_threshold,
        "hang": bool(job.hang_policy),
        "silent": max(round(now.timestamp() - progress_at), 0) if progress_at else None,
        "hung": bool(state.get("hung")),
    }
