"""An elastic PyTorch job started on fewer nodes than it asked grows back once a node frees
up (SPEC F5, seed 000 "弹性训练"): it saves a checkpoint on SIGTERM, goes back to the queue
ahead of its priority at the count it asked, and resumes there on all of them."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from console import limits
from jobs import operations
from jobs.execution import runs
from jobs.faults import elastic
from jobs.models import Attempt, FaultRecord, Job, Phase, Status
from resources.models import Allocation, Image
from tests.helpers import wait_until
from tests.jobs.execution_helpers import admit_and_launch, latest_step, log_of, make_job, program
from tests.jobs.factories import JobFactory
from tests.resources.factories import (
    AcceleratorModelFactory,
    AllocationFactory,
    NodeFactory,
    NodeSpecFactory,
    ResourcePoolFactory,
)

STEPS = 40


@pytest.fixture
def elastic_pool(vision):
    """Two one-board nodes of a dedicated pool of vision's, and a one-board spec."""
    from decimal import Decimal

    model = AcceleratorModelFactory(name="Demo-GPU")
    pool = ResourcePoolFactory(name="elastic-pool")
    pool.projects.add(vision)
    nodes = [
        NodeFactory(name=name, board_count=1, accelerator_model=model, pool=pool)
        for name in ("node-a", "node-b")  # one board each: one replica per node
    ]
    gpu = NodeSpecFactory(name="gpu-1", cpu_millicores=1000, memory_mib=1024,
                          boards=Decimal(1), accelerator_model=model)  # fmt: skip
    return {"pool": pool, "nodes": nodes, "gpu": gpu}


def running_on(node, job, **fields) -> Attempt:
    """A job running on ``node`` as far as the database says (no process behind it)."""
    Job.objects.filter(pk=job.pk).update(
        phase=Phase.RUNNING, status=Status.RUNNING, started_at=timezone.now(), **fields
    )
    AllocationFactory(node=node, holder_kind=Allocation.Holder.JOB, holder_id=job.pk,
                      label=job.name, slots=[0])  # fmt: skip
    return Attempt.objects.create(
        job=job, number=1, backend="local", workload_id=f"w-{job.pk}",
        state=Attempt.State.RUNNING, submitted_at=timezone.now(),
        replicas=[{"name": "worker-0", "node": node.name}], watch={"hang": {"seen": 1}},
    )  # fmt: skip


def test_growth_waits_for_the_room_to_last_and_forgets_it_when_it_goes(
    alice, vision, admin, elastic_pool
):
    limits.save({"scale_up_after_seconds": 60}, admin)
    a, b = elastic_pool["nodes"]
    job = JobFactory(owner=alice, project=vision, specs=[elastic_pool["gpu"]],
                     pool=elastic_pool["pool"], nodes_asked=2, elastic_min_nodes=1,
                     elastic_scale_up=True, resume_enabled=True, max_resumes=1)  # fmt: skip
    attempt = running_on(a, job, nodes_granted=1)
    now = timezone.now()
    assert elastic.grow(now) == []
    attempt.refresh_from_db()
    assert set(attempt.watch) == {"hang", "room_since"}  # the log watch's key is kept
    assert elastic.grow(now + timedelta(seconds=30)) == []
    # Node b is taken: the room is gone and forgotten; seen again, it starts over.
    other = JobFactory(owner=alice, project=vision, specs=[elastic_pool["gpu"]],
                       pool=elastic_pool["pool"])  # fmt: skip
    running_on(b, other, nodes_granted=1)
    assert elastic.grow(now + timedelta(seconds=61)) == []
    attempt.refresh_from_db()
    assert attempt.watch == {"hang": {"seen": 1}}
    Allocation.objects.filter(holder_id=other.pk).update(released_at=timezone.now())
    Job.objects.filter(pk=other.pk).update(phase=Phase.SUCCEEDED, status=Status.SUCCEEDED)
    later = now + timedelta(seconds=100)
    assert elastic.grow(later) == []
    assert elastic.grow(later + timedelta(seconds=60)) == [attempt.pk]
    attempt.refresh_from_db()
    assert attempt.stop_cause == Attempt.StopCause.SCALE
    assert "1 more node is free: growing from 1 to 2." in attempt.fault["message"]


def test_no_growth_without_scale_up_or_at_the_count_asked(alice, vision, admin, elastic_pool):
    limits.save({"scale_up_after_seconds": 0}, admin)
    a, b = elastic_pool["nodes"]
    fixed = JobFactory(owner=alice, project=vision, specs=[elastic_pool["gpu"]],
                       pool=elastic_pool["pool"], nodes_asked=2, elastic_min_nodes=1,
                       resume_enabled=True, max_resumes=1)  # fmt: skip
    running_on(a, fixed, nodes_granted=1)
    full = JobFactory(owner=alice, project=vision, specs=[elastic_pool["gpu"]],
                      pool=elastic_pool["pool"], nodes_asked=1, elastic_min_nodes=1,
                      elastic_scale_up=True, resume_enabled=True, max_resumes=1)  # fmt: skip
    running_on(b, full, nodes_granted=1)
    assert elastic.candidates() == []
    assert elastic.grow() == []


@pytest.mark.usefixtures("local_runs")
def test_an_elastic_job_grows_to_the_nodes_it_asked_once_one_is_free(
    alice, vision, admin, transactional_db, torch_runtime, elastic_pool
):
    from resources import samples

    limits.save({"scale_up_after_seconds": 0}, admin)
    pool, gpu = elastic_pool["pool"], elastic_pool["gpu"]

    # The blocker holds node-b until the elastic job has trained a few steps, however slowly
    # this machine imports torch: a SIGTERM before the first step leaves nothing to resume.
    blocker = make_job(alice, vision, gpu, pool=pool, command="sleep 600")
    admit_and_launch()
    job = make_job(
        alice,
        vision,
        gpu,
        mode="pytorch",
        pool=pool,
        nodes_asked=2,
        elastic_min_nodes=1,
        elastic_scale_up=True,
        resume_enabled=True,
        graceful_shutdown_seconds=10,
        max_resumes=1,
        command=f"python /workspace/algorithm/train.py --steps {STEPS} --batch-size 16 --sleep 0.3",
    )
    Image.objects.filter(pk=job.image_id).update(local_runtime=str(torch_runtime))
    program(job, "train.py", samples.TRAIN_SCRIPT.read_text())
    admit_and_launch()
    job.refresh_from_db()
    assert job.phase != Phase.ERROR and job.nodes_granted == 1, job.reason  # beside the blocker

    def trained():
        runs.sync()
        job.refresh_from_db()
        assert job.phase != Phase.ERROR, job.reason
        return latest_step(job) >= 3

    wait_until(trained, 60, 0.3)
    blocker.refresh_from_db()
    operations.stop(blocker, alice)

    def grown():
        runs.sync()
        elastic.grow()
        admit_and_launch()
        job.refresh_from_db()
        return job.phase in (Phase.SUCCEEDED, Phase.ERROR) or job.attempts.count() > 1

    wait_until(grown, 40, 0.3)
    blocker.refresh_from_db()
    assert not blocker.is_live
    first = job.attempts.get(number=1)
    assert first.stop_cause == Attempt.StopCause.SCALE
    assert "growing from 1 to 2." in first.fault["message"]
    # Back at the head of its priority at the count it asked for, elastic as before.
    assert (job.nodes, job.nodes_asked, job.elastic_min_nodes) == (2, 2, 1)
    assert job.resumes_used == 0  # growing is not a fault: no resume is used
    assert FaultRecord.objects.get(job=job).action == FaultRecord.Action.SCALE

    def ended():
        runs.sync()
        job.refresh_from_db()
        return job.phase in (Phase.SUCCEEDED, Phase.ERROR)

    # The resumed run: torch imported by two replicas, then the rest of its 40 steps of
    # 0.3 s; the suite's other worker may hold the second core all that time.
    wait_until(ended, 90, 0.3)
    second = job.attempts.get(number=2)
    text = log_of(second)
    assert job.phase == Phase.SUCCEEDED, f"{job.reason}\n{log_of(first)}\n{text}"
    assert len(second.replicas) == 2
    step = int(re.search(r"resumed from \S+ \(step (\d+)\)", text).group(1))
    assert 0 < step < STEPS
    assert "training: 2 process(es)" in text and f"steps {step}..{STEPS}" in text
    assert f"step {STEPS}/{STEPS}" in text


def test_requeued_to_grow_it_is_admitted_first_on_all_it_asked(
    alice, vision, admin, transactional_db, elastic_pool
):
    from jobs.admission.db import run_pass
    from jobs.faults import recovery
    from resources.backends.base import WorkloadState, WorkloadStatus

    limits.save({"scale_up_after_seconds": 0}, admin)
    a, _ = elastic_pool["nodes"]
    job = JobFactory(owner=alice, project=vision, specs=[elastic_pool["gpu"]],
                     pool=elastic_pool["pool"], nodes_asked=2, elastic_min_nodes=1,
                     elastic_scale_up=True, resume_enabled=True, max_resumes=1)  # fmt: skip
    attempt = running_on(a, job, nodes_granted=1)
    # Waiting since before it was submitted, of the same priority: requeued, it goes ahead
    # of this one (SPEC Q2), so the free node counts as room to grow.
    waiting = JobFactory(owner=alice, project=vision, specs=[elastic_pool["gpu"]],
                         pool=elastic_pool["pool"], nodes_asked=2)  # fmt: skip
    Job.objects.filter(pk=waiting.pk).update(submitted_at=timezone.now() - timedelta(hours=1))
    assert elastic.grow() == [attempt.pk]
    attempt.refresh_from_db()
    job.refresh_from_db()
    stopped = WorkloadStatus(WorkloadState.STOPPED, reason="stopped")
    assert recovery.on_end(job, attempt, stopped) == recovery.REQUEUED
    job.refresh_from_db()
    assert (job.phase, job.nodes_asked, job.nodes_granted, job.elastic_min_nodes) == (
        Phase.QUEUED,
        2,
        None,
        1,
    )
    assert job.resubmitted and job.resubmitted_at is None  # growing is no fault (Q6)
    assert run_pass().admitted == [job.pk]
    job.refresh_from_db()
    assert job.nodes_granted == 2
    waiting.refresh_from_db()
    assert waiting.phase == Phase.QUEUED
