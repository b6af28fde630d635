"""Chaos (issue 13's proof): 200 small jobs of every mode run for real on two Celery worker
processes while faults are injected at random, every task is delivered twice, and one worker
is killed with SIGKILL mid-run.

Afterwards: no job is lost (each ended), none ran twice at once, no node was ever given more
than it has, every count is respected, and each job's end is explained by its options.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import signal
import threading
import time
from collections import Counter
from decimal import Decimal

import pytest
from django.db import connection
from django.db.models import Count, Sum

from console import limits
from console.celery import app
from jobs.models import Attempt, FaultRecord, Job, Phase
from jobs.tasks import admit, sync_runs, watch_faults
from resources.inventory import faults
from resources.models import Allocation, FaultKind, Node
from tests.helpers import start_worker_process
from tests.jobs.execution_helpers import make_job
from tests.resources.factories import ImageFactory, NodeFactory, NodeSpecFactory

pytestmark = pytest.mark.usefixtures("local_runs")

JOBS = 200
NODES = 5
BUDGET_SECONDS = 150
LEAST = {FaultKind.KILL: 10, FaultKind.HEARTBEAT: 3}  # faults of each kind the run must meet
OK = "sleep 1"
# Fails with a fault exit code the first time, then succeeds (seed 003's exit codes).
ONCE = (
    'sh -c \'if [ -e "$CONSOLE_OUTPUT_DIR/once" ]; then sleep 1; '
    'else touch "$CONSOLE_OUTPUT_DIR/once"; exit 101; fi\''
)
BUGGY = "sh -c 'sleep 0.5; exit 3'"


def chaos_jobs(alice, vision, spec, rng: random.Random, mpi_image) -> dict[int, str]:
    modes = ["single"] * 14 + ["tensorflow", "pytorch", "deepspeed", "mpi"]
    kinds = {}
    for _ in range(JOBS):
        mode = rng.choice(modes)
        kind = rng.choices(["ok", "once", "buggy"], weights=[70, 18, 12])[0]
        option = rng.choice(["none", "restart", "resume"])
        fields = {
            "mode": mode,
            "nodes_asked": 1 if mode == "single" else 2,
            "command": {"ok": OK, "once": ONCE, "buggy": BUGGY}[kind],
            "graceful_shutdown_seconds": 1,
            "fault_restart_enabled": option == "restart",
            "max_restarts": rng.randint(1, 3) if option == "restart" else 0,
            "resume_enabled": option == "resume",
            "max_resumes": rng.randint(1, 3) if option == "resume" else 0,
        }
        if mode == "mpi":  # mpirun from the image's runtime (Open MPI from the package index)
            fields["image"] = mpi_image
        job = make_job(alice, vision, spec, **fields)
        kinds[job.pk] = kind
    return kinds


class Chaos:
    """Beat (every task sent twice), the fault injector and the allocation checker."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.stop = threading.Event()
        self.violations: list[str] = []
        self.injected = Counter()

    def pick(self, weights: dict, least: dict):
        """The next fault's kind: one short of the least the test asks first (the fewest made
        so far), then at random by weight. A seeded draw could otherwise give a kind too few
        turns in a run that happened to be short."""
        short = [k for k in least if self.injected[k] < least[k]]
        if short:
            return min(short, key=lambda k: self.injected[k] / least[k])
        return self.rng.choices(list(weights), weights=list(weights.values()))[0]

    def beat(self):
        try:
            while not self.stop.wait(0.7):
                for task in (admit, sync_runs, admit, sync_runs, watch_faults):
                    task.delay()
                self.check()
        finally:
            connection.close()

    def check(self):
        over = (
            Allocation.objects.live()
            .values("node__name", "node__cpu_millicores", "node__memory_mib")
            .annotate(cpu=Sum("cpu_millicores"), memory=Sum("memory_mib"))
        )
        for row in over:
            if row["cpu"] > row["node__cpu_millicores"] or row["memory"] > row["node__memory_mib"]:
                self.violations.append(f"over-allocated {row}")
        twice = (
            Attempt.objects.filter(ended_at=None)
            .values("job")
            .annotate(n=Count("id"))
            .filter(n__gt=1)
        )
        self.violations += [f"two live attempts: {row}" for row in twice]

    def inject(self):
        try:
            names = list(Node.objects.values_list("name", flat=True))
            while not self.stop.wait(self.rng.uniform(0.8, 1.6)):
                node = Node.objects.get(name=self.rng.choice(names))
                kind = self.pick({FaultKind.KILL: 3, FaultKind.HEARTBEAT: 1}, LEAST)
                fault = faults.inject(node, kind)
                self.injected[kind] += 1
                if kind == FaultKind.HEARTBEAT:  # an admin repairs it a little later
                    time.sleep(self.rng.uniform(1.0, 2.5))
                    faults.clear(fault)
                    faults.return_to_service(node)
        finally:
            connection.close()


@contextlib.contextmanager
def workers(count: int):
    processes = [start_worker_process("--pool", "solo") for _ in range(count)]
    try:
        yield processes
    finally:
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
        # The beat sent faster than two workers take: what is left must not run in a later
        # test (on its rows, by the in-process worker).
        app.control.purge()


def finished() -> int:
    return Job.objects.exclude(phase__in=[Phase.QUEUED, Phase.ADMITTED, Phase.STARTING,
                                          Phase.RUNNING, Phase.RESTARTING,
                                          Phase.RESUMING]).count()  # fmt: skip


def test_two_hundred_jobs_survive_random_faults_and_a_killed_worker(
    transactional_db, alice, vision, admin, mpi_runtime
):
    rng = random.Random(13)
    limits.save({"inspection_seconds": 1, "fault_exit_codes": [101], "precheck_root_gb": 0,
                 "precheck_shm_gb": 0, "precheck_cache_gb": 0}, admin)  # fmt: skip
    for index in range(NODES):
        NodeFactory(name=f"chaos-{index}", cpu_millicores=3000, memory_mib=3072)
    spec = NodeSpecFactory(name="tiny", cpu_millicores=500, memory_mib=512, boards=Decimal(0))
    kinds = chaos_jobs(alice, vision, spec, rng, ImageFactory(local_runtime=str(mpi_runtime)))
    chaos = Chaos(rng)
    took, killed_at = run(chaos, JOBS, BUDGET_SECONDS)
    assert all(chaos.injected[kind] >= least for kind, least in LEAST.items()), chaos.injected

    outcomes = Counter()
    for job in Job.objects.prefetch_related("attempts", "faults"):
        explain(job, kinds[job.pk])
        outcomes[(kinds[job.pk], job.phase)] += 1
    # The faults did something, and most jobs still made it.
    assert FaultRecord.objects.filter(action__in=["restart", "resume"]).count() >= 20
    assert outcomes[("ok", Phase.SUCCEEDED)] >= 60, outcomes
    ledger_holds(Job.objects.all())
    print(f"chaos: {JOBS} jobs in {took:.0f}s, worker killed after {killed_at} ended; "
          f"{dict(outcomes)}; injected {dict(chaos.injected)}")  # fmt: skip


def run(chaos: Chaos, jobs: int, budget: float) -> tuple[float, int]:
    """Two worker processes, the beat and the injector, until every job has ended (or the
    budget is spent); one worker is killed once a third have. Then none may be lost, and
    nothing broke a rule on the way. Returns (seconds taken, jobs ended at the kill)."""
    threads = [threading.Thread(target=chaos.beat), threading.Thread(target=chaos.inject)]
    began, killed_at = time.monotonic(), None
    with workers(2) as (victim, _survivor):
        for thread in threads:
            thread.start()
        try:
            while time.monotonic() - began < budget:
                done = finished()
                if killed_at is None and done >= jobs // 3:
                    os.killpg(victim.pid, signal.SIGKILL)  # mid-run, as a crash would
                    killed_at = done
                if done == jobs:
                    break
                time.sleep(1)
        finally:
            chaos.stop.set()
            for thread in threads:
                thread.join(30)
    took = time.monotonic() - began
    assert killed_at is not None, "the worker was never killed: too few jobs ended"
    live = Job.objects.exclude(phase__in=[Phase.SUCCEEDED, Phase.ERROR])
    assert not live.exists(), f"lost after {took:.0f}s: {lost(live)}"
    assert not chaos.violations, chaos.violations[:5]
    return took, killed_at


def ledger_holds(jobs) -> None:
    """SPEC G4 after the chaos: every allocation closed (once: a release only closes an open
    one) after it began, each recording its job's owner and project, and the CPU core-hours
    the database sums for each project equal to its intervals' own sums."""
    from decimal import Decimal

    from resources.usage import usage_in

    assert not Allocation.objects.live().exists()
    holders = {job.pk: (job.owner_id, job.project_id) for job in jobs}
    rows = list(Allocation.objects.filter(holder_kind="job"))
    assert rows and all((a.owner_id, a.project_id) == holders[a.holder_id] for a in rows)
    assert all(a.released_at >= a.created_at for a in rows)
    own: Counter = Counter()
    for a in rows:
        held = Decimal((a.released_at - a.created_at).total_seconds()) / 3600
        own[a.project_id] += Decimal(a.cpu_millicores) / 1000 * held
    first, last = min(a.created_at for a in rows), max(a.released_at for a in rows)
    summed = {u.key: u.cpu_hours for u in usage_in(first, last, now=last)}
    expected = {project: hours.quantize(Decimal("0.001")) for project, hours in own.items()}
    assert summed == {project: hours for project, hours in expected.items() if hours}


def lost(jobs) -> list:
    return [
        (job.name, job.phase, job.admitted_at,
         list(job.attempts.values("number", "state", "stop_cause", "created_at", "submitted_at",
                                  "ended_at", "reason")),
         [e.message for e in job.events.all()][-6:])
        for job in jobs
    ]  # fmt: skip


def explain(job: Job, kind: str) -> None:
    """Every count respected, no two attempts at once, and an end its options explain."""
    attempts = sorted(job.attempts.all(), key=lambda a: a.number)
    records = list(job.faults.all())
    assert [a.number for a in attempts] == list(range(1, len(attempts) + 1)), job.name
    for earlier, later in itertools.pairwise(attempts):
        assert earlier.ended_at is not None and earlier.ended_at <= later.created_at, job.name
    assert job.restarts_used <= job.max_restarts and job.resumes_used <= job.max_resumes
    recovered = sum(r.action in ("restart", "resume") for r in records)
    assert recovered == job.restarts_used + job.resumes_used, job.name
    assert job.restarts_used == 0 or job.fault_restart_enabled
    assert job.resumes_used == 0 or job.resume_enabled
    if job.phase == Phase.SUCCEEDED:
        assert kind != "buggy", job.name
        assert kind != "once" or job.fault_tolerant, job.name  # its first try always fails
        return
    assert job.phase == Phase.ERROR
    if kind == "buggy" and "exited with code 3" in job.reason:
        return  # its own code failed (seed 004 scenario 4): never restarted for it
    final = records[-1] if records else None
    assert final is not None and final.action == "error", f"{job.name}: {job.reason}"
    if job.fault_tolerant:
        assert (
            "recoveries are used" in job.reason or "only recovery is used" in job.reason
        ) and final.used == final.allowed, job.reason
    else:
        assert "neither checkpoint resume nor fault restart" in job.reason, job.reason
