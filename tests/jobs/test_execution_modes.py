"""Distributed jobs run for real (SPEC L2-L5): each replica sees what its framework expects,
checked from inside the job by the tests' checker (tests/checkers); MPI runs under OpenMPI;
one failing node fails the job with its exit code."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from jobs.models import Attempt, JobEvent, Phase
from resources.catalog.mounts import storage_source
from resources.models import Image
from tests.checkers import CHECK_ENV
from tests.jobs.execution_helpers import (
    admit_and_launch,
    log_of,
    make_job,
    program,
    wait_for_phase,
)
from tests.resources.factories import ImageFactory, NodeSpecFactory

pytestmark = pytest.mark.usefixtures("local_runs")


def checked_job(alice, vision, spec, mode: str, nodes: int, ps: int = 0, extra: str = ""):
    command = f"python3 /workspace/algorithm/check_env.py --mode {mode} --nodes {nodes}{extra}"
    job = make_job(
        alice, vision, spec, mode=mode, nodes_asked=nodes, ps_count=ps, command=command,
        graceful_shutdown_seconds=2,
    )  # fmt: skip
    program(job, "check_env.py", CHECK_ENV.read_text())
    return job


def logs(job) -> dict[str, str]:
    attempt = Attempt.objects.get(job=job)
    return {r["name"]: log_of(attempt, r["name"]) for r in attempt.replicas}


def test_tensorflow_ps_and_workers_each_see_their_tf_config(alice, vision, run_cluster):
    job = checked_job(alice, vision, run_cluster["gpu"], "tensorflow", 2, ps=1, extra=" --ps 1")
    admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED, Phase.ERROR)
    seen = logs(job)
    assert job.phase == Phase.SUCCEEDED, f"{job.reason}\n" + "\n".join(seen.values())
    assert set(seen) == {f"{job.name}-worker-0", f"{job.name}-worker-1", f"{job.name}-ps-0"}
    for name in (f"{job.name}-worker-0", f"{job.name}-worker-1"):
        assert "TF_CONFIG" in seen[name]


def test_deepspeed_workers_find_the_hostfile(alice, vision, run_cluster):
    job = checked_job(alice, vision, run_cluster["gpu"], "deepspeed", 2)
    admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED, Phase.ERROR)
    seen = logs(job)
    assert job.phase == Phase.SUCCEEDED, f"{job.reason}\n" + "\n".join(seen.values())
    assert all("hostfile" in text for text in seen.values())


def test_pytorch_variables_on_every_node_for_a_command_run_as_typed(alice, vision, run_cluster):
    job = make_job(
        alice,
        vision,
        run_cluster["gpu"],
        mode="pytorch",
        nodes_asked=2,
        command='bash -c "python3 /workspace/algorithm/check_env.py --mode pytorch --nodes 2"',
    )
    program(job, "check_env.py", CHECK_ENV.read_text())
    admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED, Phase.ERROR)
    seen = logs(job)
    assert job.phase == Phase.SUCCEEDED, f"{job.reason}\n" + "\n".join(seen.values())
    assert all("MASTER_ADDR" in text for text in seen.values())


# One node with both its boards (seed 000's commonest Horovod job), and two nodes of one.
@pytest.mark.parametrize(("nodes", "boards"), [(1, 2), (2, 1)])
def test_an_mpi_job_runs_every_rank_under_openmpi(
    alice, vision, run_cluster, mpi_runtime, nodes, boards
):
    spec = run_cluster["gpu"]
    if boards != spec.boards:
        spec = NodeSpecFactory(
            name="gpu-2", cpu_millicores=1000, memory_mib=1024, boards=Decimal(boards),
            accelerator_model=spec.accelerator_model,
        )  # fmt: skip
    job = make_job(
        alice,
        vision,
        spec,
        mode="mpi",
        nodes_asked=nodes,
        command="python3 /workspace/algorithm/rank.py",
        graceful_shutdown_seconds=2,
        image=ImageFactory(local_runtime=str(mpi_runtime)),
    )
    program(
        job,
        "rank.py",
        """
        import os
        # One write per line: both ranks share the log, and unbuffered prints interleave.
        rank, size = os.environ["OMPI_COMM_WORLD_RANK"], os.environ["OMPI_COMM_WORLD_SIZE"]
        os.write(1, f"rank {rank} of {size}\\n".encode())
        """,
    )
    admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED, Phase.ERROR, timeout=60)
    seen = logs(job)
    assert job.phase == Phase.SUCCEEDED, f"{job.reason}\n" + "\n".join(seen.values())
    entry = seen[f"{job.name}-worker-0"]
    # Worker 0 launched every rank (one node: mpirun never reaches for ssh).
    ranks = nodes * boards
    assert all(f"rank {r} of {ranks}" in entry for r in range(ranks)), entry


def test_one_failing_node_fails_the_job_with_its_exit_code(alice, vision, run_cluster):
    job = make_job(
        alice,
        vision,
        run_cluster["gpu"],
        mode="tensorflow",
        nodes_asked=2,
        command="python3 /workspace/algorithm/flaky.py",
        graceful_shutdown_seconds=2,
    )
    program(
        job,
        "flaky.py",
        """
        import os, sys, time
        if os.environ["CONSOLE_REPLICA_INDEX"] == "1":
            time.sleep(0.5)
            print("worker 1 gives up", flush=True)
            sys.exit(4)
        time.sleep(600)
        """,
    )
    admit_and_launch()
    job = wait_for_phase(job, Phase.ERROR, timeout=30)
    attempt = Attempt.objects.get(job=job)
    assert attempt.exit_code == 4
    assert "worker 1 exited with code 4" in job.reason
    event = JobEvent.objects.filter(job=job, kind=JobEvent.Kind.ERROR).get()
    assert "worker 1 exited with code 4" in event.message


def test_a_two_node_pytorch_job_trains_with_ddp_and_succeeds(
    alice, vision, run_cluster, torch_runtime
):
    from resources import samples

    job = make_job(
        alice,
        vision,
        run_cluster["gpu"],
        mode="pytorch",
        nodes_asked=2,
        command="python /workspace/algorithm/train.py --steps 6 --batch-size 16",
    )
    Image.objects.filter(pk=job.image_id).update(local_runtime=str(torch_runtime))
    program(job, "train.py", samples.TRAIN_SCRIPT.read_text())
    admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED, Phase.ERROR, timeout=120)
    seen = logs(job)
    assert job.phase == Phase.SUCCEEDED, f"{job.reason}\n" + "\n".join(seen.values())
    entry = seen[f"{job.name}-worker-0"]
    assert "2 process(es)" in entry  # one per node: WORLD_SIZE 2 through the launcher
    assert re.search(r"this iteration hardware time is [\d.]+ and e2e time is [\d.]+ ms", entry)
    outputs = storage_source(job.output_path)
    assert sorted(p.name for p in outputs.glob("checkpoint-*.pt"))
