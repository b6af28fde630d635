"""Fault recovery on the local backend, through a real Celery worker with beat's periods
(sync every 2 s, fault watch every 1 s, admission every 5 s) and the default inspection
period (5 s):

* detection latency: a node's heartbeat lost (injected) -> the platform stops the job there;
* resume overhead: that moment -> the job training again elsewhere (its new attempt
  running and printing its first line).
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from pathlib import Path

from tests.bench.execution import _setup, _submit, _wait, _worker
from tests.bench.harness import bench_database, p50_p95

RUNS = 10


@contextlib.contextmanager
def _beat():
    from jobs.tasks import admit, watch_faults

    done = threading.Event()

    def loop():
        tick = 0
        while not done.wait(1.0):
            watch_faults.delay()
            if tick % 5 == 0:
                admit.delay()
            tick += 1

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _until(condition, timeout: float = 60) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return time.monotonic()
        time.sleep(0.02)
    raise RuntimeError("timed out")


def fault_recovery():
    folder = Path(tempfile.mkdtemp(prefix="console-bench-"))
    folder.chmod(0o711)
    with bench_database(), _worker(folder), _beat():
        from jobs import operations
        from jobs.backend import attempt_backend
        from jobs.models import Attempt, Job, Phase
        from resources.inventory import faults
        from resources.models import FaultKind, Node

        setup = _setup()
        Node.objects.create(name="bench-node-2", cpu_millicores=64000, memory_mib=256 * 1024)
        detection, overhead = [], []
        for i in range(RUNS):
            job = _submit(setup, f"fault-{i}", 100000, 0.1)
            Job.objects.filter(pk=job.pk).update(resume_enabled=True, max_resumes=3)
            _wait(job, [Phase.RUNNING])
            first = Attempt.objects.get(job=job)
            _until(
                lambda a=first: attempt_backend(a).log_size(a.workload_id, a.replicas[0]["name"])
            )
            node = Node.objects.get(name=first.replicas[0]["node"])
            fault = faults.inject(node, FaultKind.HEARTBEAT)
            injected = time.monotonic()
            reacted = _until(lambda a=first: Attempt.objects.filter(pk=a.pk).exclude(
                stop_cause="").exists())  # fmt: skip

            def training_again(j=job):
                again = Attempt.objects.filter(job=j, number=2, running_at__isnull=False).first()
                return again is not None and attempt_backend(again).log_size(
                    again.workload_id, again.replicas[0]["name"]
                )

            resumed = _until(training_again)
            detection.append((reacted - injected) * 1000)
            overhead.append((resumed - reacted) * 1000)
            operations.stop(Job.objects.get(pk=job.pk), setup[0])
            _wait(job, [Phase.STOPPED, Phase.ERROR])
            faults.clear(fault)
            faults.return_to_service(node)
    return [
        ("fault detection: heartbeat lost -> job stopped there (inspection every 5 s)",
         p50_p95(detection)),
        ("resume overhead: job stopped -> training again on another node",
         p50_p95(overhead)),
        ("fault -> training again, total", p50_p95([d + o for d, o in zip(detection, overhead,
                                                                        strict=True)])),
    ]  # fmt: skip
