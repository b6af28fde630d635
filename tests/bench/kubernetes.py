"""Jobs on a Kubernetes cluster, against the test suite's fake API server run as a process of
its own (so the console's CPU time is measured apart from the fake's):

* the calls one job costs from its submit to its deletion;
* one sync pass over 1,000 running jobs: console CPU time and API calls, with and without
  usage samples due;
* admission -> Volcano job created, through a real Celery worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from tests.bench.harness import bench_database, p50_p95

RUNNING_JOBS = 1000
NAMESPACE = "ml"


@contextlib.contextmanager
def _fake() -> Iterator[dict]:
    """The fake API server in a process of its own: {"url", "token"}."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.resources.k8s_fake", "--port", str(port), "--nodes", "16",
         "--namespace", NAMESPACE],
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        line = process.stdout.readline()
        yield json.loads(line)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(10)


@contextlib.contextmanager
def _counting_calls() -> Iterator[Counter]:
    """Every request the console sends, by (method, kind of path)."""
    from resources.backends.kubernetes.api import Api

    calls: Counter = Counter()
    original = Api.request

    def request(self, method, path, *args, **kwargs):
        calls[(method, _kind(path))] += 1
        return original(self, method, path, *args, **kwargs)

    Api.request = request
    try:
        yield calls
    finally:
        Api.request = original


def _kind(path: str) -> str:
    parts = path.strip("/").split("/")
    if parts[-1] == "log":
        return "pods/log"
    if "namespaces" in parts:
        at = parts.index("namespaces") + 2
        return "/".join(parts[at : at + 1]) + ("/{name}" if len(parts) > at + 1 else "")
    return parts[-1]


def _world(fake: dict):
    """A project, a cluster record for the fake with its nodes in a pool, and a spec."""
    from decimal import Decimal

    from django.contrib.auth.models import User

    from console.models import Membership, Project
    from resources.models import AcceleratorModel, Cluster, NodeSpec, ResourcePool
    from resources.tasks import sync_cluster

    user = User.objects.create_user("alice", password="x")
    project = Project.objects.create(name="Vision", slug="vision")
    Membership.objects.create(project=project, user=user)
    pool = ResourcePool.objects.create(name="cluster")
    pool.projects.add(project)
    cluster = Cluster(
        name="bench", connection=Cluster.Connection.TOKEN, api_url=fake["url"],
        namespace=NAMESPACE, default_pool=pool, storage_host_path="/srv/console",
    )  # fmt: skip
    cluster.set_token(fake["token"])
    cluster.save()
    sync_cluster(cluster)
    model = AcceleratorModel.objects.filter(name="A100").first()
    spec = NodeSpec.objects.create(
        name="small", cpu_millicores=500, memory_mib=512,
        boards=Decimal(0), accelerator_model=None,
    )  # fmt: skip
    return user, project, pool, cluster, spec, model


def api_calls_per_job():
    """One job from submit to deletion: the calls it costs on its own, and the shared list
    calls of the sync passes that followed it."""
    with bench_database(), tempfile.TemporaryDirectory() as folder, _fake() as fake:
        from django.conf import settings

        from console.celery import app
        from jobs import operations
        from jobs.execution import runs
        from jobs.models import Phase
        from tests.jobs.execution_helpers import admit_and_launch, log_of, make_job

        settings.STORAGE_ROOT = Path(folder) / "storage"
        settings.CLUSTER_LOGS_DIR = Path(folder) / "logs"
        # No worker here: the stop and clean-up tasks run inline, their calls counted.
        app.conf.task_always_eager = True
        user, project, pool, _cluster, spec, _ = _world(fake)
        job = make_job(user, project, spec, pool=pool, graceful_shutdown_seconds=1)
        passes = 0
        with _counting_calls() as calls:
            [attempt] = admit_and_launch()
            while True:
                passes += 1
                runs.sync()
                job.refresh_from_db()
                if job.phase == Phase.RUNNING:
                    break
                time.sleep(0.2)
            log_of(attempt)  # someone opens its log once
            operations.stop(job, user)  # its Celery task runs inline (eager), see below
            while job.phase != Phase.STOPPED:
                passes += 1
                time.sleep(0.2)
                runs.sync()
                job.refresh_from_db()
            operations.delete(job, user)  # the clean-up task runs inline too
        own = {
            k: n
            for k, n in calls.items()
            if "{name}" in k[1] or k[1] == "pods/log" or k[0] != "GET"
        }
        shared = {k: n for k, n in calls.items() if k not in own}
        words = ", ".join(f"{m} {k} ×{n}" for (m, k), n in sorted(own.items()))
        return [
            ("k8s: API calls of one job, submit -> deletion", f"{sum(own.values())} ({words})"),
            (
                "  shared list calls over the sync passes that followed it",
                f"{sum(shared.values())} over {passes} passes ("
                + ", ".join(f"{m} {k} ×{n}" for (m, k), n in sorted(shared.items()))
                + ")",
            ),
        ]


def _running_jobs(user, project, pool, cluster, spec, count: int) -> list[str]:
    """``count`` jobs running on the cluster, as the console would have them after their
    submits: rows in the database, Volcano jobs on the fake (posted here directly)."""
    from datetime import timedelta

    from django.utils import timezone

    from jobs.execution.workloads import workload_id
    from jobs.models import Attempt, Job, Phase
    from resources.backends.kubernetes.api import Api
    from resources.backends.kubernetes.render import WORKLOAD_LABEL
    from resources.clusters import connection_of
    from resources.models import Image

    image = Image.objects.create(name="img", reference="r/i:1", scopes=["training"])
    now = timezone.now()
    jobs = Job.objects.bulk_create(
        Job(
            name=f"run-{i}", owner=user, project=project, pool=pool, image=image,
            command="python t.py",
            output_path="o", duration_hours=24, phase=Phase.RUNNING, started_at=now,
            deadline=now + timedelta(hours=24), submitted_at=now,
        )
        for i in range(count)
    )  # fmt: skip
    attempts = Attempt.objects.bulk_create(
        Attempt(
            job=job, number=1, backend="kubernetes", cluster=cluster,
            workload_id=workload_id(job, 1), state=Attempt.State.RUNNING,
            replicas=[{"name": "worker-0", "label": "worker 0", "node": ""}],
            submitted_at=now, running_at=now,
        )
        for job in jobs
    )  # fmt: skip
    api = Api(connection_of(cluster), 10)
    for attempt in attempts:
        labels = {WORKLOAD_LABEL: attempt.workload_id}
        api.request("POST", f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/jobs",
                    "create Volcano jobs", body={
            "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": attempt.workload_id, "labels": labels},
            "spec": {"schedulerName": "volcano", "minAvailable": 1, "tasks": [{
                "name": "worker-0", "replicas": 1,
                "template": {"metadata": {"labels": labels}, "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox:1.36",
                                    "command": ["sleep", "infinity"]}]}},
            }]},
        })  # fmt: skip
    return [a.workload_id for a in attempts]


def sync_pass_1000():
    """One sync pass over 1,000 running jobs on one cluster: console CPU and API calls."""
    with bench_database(), tempfile.TemporaryDirectory() as folder, _fake() as fake:
        from django.conf import settings
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from jobs.execution import runs
        from jobs.models import Attempt, UsageSample
        from resources import clusters

        settings.STORAGE_ROOT = Path(folder) / "storage"
        settings.CLUSTER_LOGS_DIR = Path(folder) / "logs"
        user, project, pool, cluster, spec, _ = _world(fake)
        names = _running_jobs(user, project, pool, cluster, spec, RUNNING_JOBS)
        backend = clusters.backend_for(cluster)

        def all_running() -> bool:
            snapshot = backend.refresh()
            return sum(
                1 for n in names
                if any((p.get("status") or {}).get("phase") == "Running"
                       for p in snapshot.pods.get(n, []))
            ) == len(names)  # fmt: skip

        deadline = time.monotonic() + 120
        while not all_running():
            if time.monotonic() > deadline:
                raise RuntimeError("the fake did not run every pod within 120 s")
            time.sleep(0.5)

        def one_pass(usage_due: bool, queries: list | None = None) -> tuple[float, float, Counter]:
            from django.utils import timezone

            Attempt.objects.update(sampled_at=None if usage_due else timezone.now())
            if usage_due:
                backend.meter.pods_seen = (0.0, {})
            backend._snapshot.at = 0.0  # a fresh look at the cluster, as each beat's pass
            capture = CaptureQueriesContext(connection) if queries is not None else None
            with (
                _counting_calls() as calls,
                capture if capture is not None else contextlib.nullcontext(),
            ):
                cpu, wall = time.process_time(), time.perf_counter()
                followed = runs.sync()
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            assert followed == RUNNING_JOBS, followed
            if capture is not None:
                queries.extend(capture.captured_queries)
            return cpu, wall, calls

        runs.sync()  # warm: schemas, connections
        figures = []
        for usage_due in (False, True):
            cpus, walls, calls = [], [], Counter()
            for _ in range(5):
                cpu, wall, calls = one_pass(usage_due)
                cpus.append(cpu * 1000)
                walls.append(wall * 1000)
            queries: list = []
            one_pass(usage_due, queries)  # apart: recording queries costs CPU too
            what = "usage samples due" if usage_due else "no usage due"
            words = ", ".join(f"{m} {k}" + (f" ×{n}" if n > 1 else "")
                              for (m, k), n in sorted(calls.items()))  # fmt: skip
            figures += [
                (f"k8s sync pass, {RUNNING_JOBS:,} running jobs ({what}): console CPU",
                 p50_p95(cpus)),
                ("  wall time", p50_p95(walls)),
                ("  API calls per pass", f"{sum(calls.values())} ({words})"),
                ("  database queries per pass", str(len(queries))),
            ]  # fmt: skip
        samples = UsageSample.objects.count()
        figures.append(
            ("  usage samples saved, one per job and pass with usage due", f"{samples:,}")
        )
        return figures


def admission_to_created():
    """Admission -> its Volcano job created on the cluster, through a real Celery worker
    (the admission task admits, the launch submits): the attempt's ``submitted_at`` is set
    once the API server has answered the create, so it bounds the object's creation."""
    with bench_database(), tempfile.TemporaryDirectory() as folder, _fake() as fake:
        from django.db import transaction

        from jobs import hooks
        from jobs.models import Attempt
        from tests.bench.execution import _worker
        from tests.jobs.execution_helpers import make_job

        os.environ["CLUSTER_LOGS_DIR"] = str(Path(folder) / "logs")
        user, project, pool, _cluster, spec, _ = _world(fake)
        admitted, created = [], []
        with _worker(Path(folder)):
            for i in range(22):
                with transaction.atomic():
                    job = make_job(user, project, spec, pool=pool, name=f"lat-{i}")
                    transaction.on_commit(hooks.queue_changed)  # as the form's submit does
                deadline = time.monotonic() + 60
                while True:
                    attempt = (
                        Attempt.objects.filter(job=job, submitted_at__isnull=False)
                        .select_related("job")
                        .first()
                    )
                    if attempt is not None:
                        break
                    if time.monotonic() > deadline:
                        job.refresh_from_db()
                        raise RuntimeError(
                            f"{job.name} was not submitted: {job.phase} {job.reason}"
                        )
                    time.sleep(0.02)
                if i < 2:
                    continue  # warm-up: the worker's first imports and connections
                admitted.append((attempt.submitted_at - attempt.job.admitted_at).total_seconds())
                created.append((attempt.submitted_at - attempt.job.submitted_at).total_seconds())
        return [
            ("k8s: admission -> Volcano job created (Celery worker)",
             p50_p95([s * 1000 for s in admitted])),
            ("  Create pressed -> Volcano job created", p50_p95([s * 1000 for s in created])),
        ]  # fmt: skip
