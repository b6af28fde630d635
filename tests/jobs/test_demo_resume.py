"""The demo shows checkpoint resume surviving a fault (SPEC F4, seed 000): a two-node
PyTorch job in the demo's dedicated pool, vision-reserved; a board fault injected on one of
its nodes with `manage.py inject_fault`; inspection stops it (it saves a checkpoint),
isolates the node and requeues it; it resumes on the pool's other node from the step it
saved and succeeds. The form had said nothing against it: the pool has room after a fault."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from console import limits
from console.models import Project
from jobs.admission import prediction, refusals
from jobs.faults import inspection
from jobs.models import Job, Phase
from resources.models import Image, NodeSpec, ResourcePool
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


def test_a_resume_job_in_the_demo_pool_moves_to_its_other_node_after_a_board_fault(
    settings, transactional_db, torch_runtime
):
    from resources import samples

    settings.DEMO_MODE = True
    call_command("seed_demo", stdout=io.StringIO())
    Job.objects.filter(phase=Phase.QUEUED).delete()  # only this job: the demo's would wait
    users = get_user_model().objects
    limits.save({"inspection_seconds": 1}, users.get(username="admin"))
    pool = ResourcePool.objects.get(name="vision-reserved")
    job = make_job(
        users.get(username="alice"), Project.objects.get(slug="vision"),
        NodeSpec.objects.get(name="gpu-1"), name="demo-resume", mode="pytorch", nodes_asked=2,
        pool=pool, command=f"python /workspace/algorithm/train.py --steps {STEPS} "
        "--batch-size 16 --sleep 0.05",
        resume_enabled=True, max_resumes=2, graceful_shutdown_seconds=20,
    )  # fmt: skip
    draft = prediction.draft_from({"pool": pool, "specs": list(job.specs.all()),
                                   "node_count": 2, "mode": "pytorch"}, job.project)  # fmt: skip
    assert draft is not None and refusals.resume_caveat(draft) is None
    Image.objects.filter(pk=job.image_id).update(local_runtime=str(torch_runtime))
    program(job, "train.py", samples.TRAIN_SCRIPT.read_text())
    admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING, Phase.ERROR, timeout=60)
    assert job.phase == Phase.RUNNING, job.reason
    first = job.attempts.get()
    used = {replica["node"] for replica in first.replicas}
    assert used <= {"local-c", "local-f"}, used
    wait_until(lambda: latest_step(job) >= 10, 60, 0.2)
    broken = first.replicas[0]["node"]
    call_command("inject_fault", broken, "board", stdout=io.StringIO())
    assert inspection.inspect() == [first.pk]

    job = wait_for_phase(job, Phase.QUEUED, Phase.ERROR, timeout=60)
    assert job.phase == Phase.QUEUED and job.resumes_used == 1, job.reason
    step = int(re.search(r"stopped by SIGTERM at step (\d+)", log_of(first)).group(1))
    admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED, Phase.ERROR, timeout=120)
    second = job.attempts.order_by("-number").first()
    assert job.phase == Phase.SUCCEEDED, job.reason
    # Both replicas on the pool's other node, from the step it saved.
    assert {replica["node"] for replica in second.replicas} == {"local-c", "local-f"} - {broken}
    assert f"(step {step})" in log_of(second) and f"done: {STEPS} steps" in log_of(second)
