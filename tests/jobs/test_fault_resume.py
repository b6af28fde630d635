"""F4 checkpoint resume with real training: a two-node PyTorch DDP job loses a node's
heartbeat mid-training; the platform sends SIGTERM (the sample saves a checkpoint), isolates
the node, requeues the job, and it finishes on healthy nodes from the step it saved."""

from __future__ import annotations

import re

import pytest

from jobs.faults import inspection
from jobs.models import FaultRecord, Phase
from resources.inventory import faults
from resources.models import FaultKind, Image, Node
from tests.helpers import wait_until
from tests.jobs.execution_helpers import (
    admit_and_launch,
    latest_step,
    log_of,
    make_job,
    program,
    wait_for_phase,
)

pytestmark = pytest.mark.usefixtures("local_runs")

STEPS = 80


def test_a_node_fault_mid_training_resumes_from_the_checkpoint(
    alice, vision, run_cluster, torch_runtime
):
    from resources import samples

    job = make_job(
        alice, vision, run_cluster["cpu"], mode="pytorch", nodes_asked=2,
        command=f"python /workspace/algorithm/train.py --steps {STEPS} --batch-size 16 "
        "--sleep 0.05",
        resume_enabled=True, max_resumes=2, graceful_shutdown_seconds=20,
    )  # fmt: skip
    Image.objects.filter(pk=job.image_id).update(local_runtime=str(torch_runtime))
    program(job, "train.py", samples.TRAIN_SCRIPT.read_text())
    admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING, Phase.ERROR, timeout=60)
    assert job.phase == Phase.RUNNING, job.reason
    wait_until(lambda: latest_step(job) >= 10, 60, 0.2)
    first = job.attempts.get()
    lost = first.replicas[1]["node"]
    faults.inject(Node.objects.get(name=lost), FaultKind.HEARTBEAT)
    assert inspection.inspect() == [first.pk]

    job = wait_for_phase(job, Phase.QUEUED, Phase.ERROR, timeout=60)
    assert job.phase == Phase.QUEUED and job.resumes_used == 1, job.reason
    saved = re.search(r"stopped by SIGTERM at step (\d+)", log_of(first))
    assert saved, log_of(first)
    step = int(saved.group(1))
    assert 10 <= step < STEPS

    admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED, Phase.ERROR, timeout=120)
    second = job.attempts.order_by("-number").first()
    log = log_of(second)
    assert job.phase == Phase.SUCCEEDED, job.reason + log
    assert lost not in {r["node"] for r in second.replicas}
    assert f"(step {step})" in log and "resumed from" in log
    assert f"steps {step}..{STEPS}" in log and f"done: {STEPS} steps" in log
    record = FaultRecord.objects.get(job=job)
    summary = (record.item, record.action, record.used, record.allowed)
    assert summary == ("heartbeat", "resume", 1, 2)
    assert record.nodes == [lost] and record.isolated
