"""One job per distributed mode, run for real to success with its demo algorithm, its demo
image and that image's runtime (issue 15): each prints the performance line, leaves a
checkpoint and TensorBoard event files in its output folder.

The runtimes are made once per machine (RUNTIMES_DIR, as `make run` makes them); one that
cannot be made fails its test with the reason. MPI comes with the PyTorch runtime (Open MPI
from the package index), so no MPI of the machine's is needed.
"""

from __future__ import annotations

import re

import pytest

from jobs.models import Attempt, Phase
from resources import samples
from resources.catalog.mounts import storage_source
from resources.models import Image
from tests.jobs.execution_helpers import admit_and_launch, log_of, make_job, wait_for_phase

pytestmark = pytest.mark.usefixtures("local_runs")

PERFORMANCE = re.compile(r"this iteration hardware time is [\d.]+ and e2e time is [\d.]+ ms")
TRAIN = "python /workspace/algorithm/train.py"
DEEPSPEED = (
    'bash -c \'deepspeed --hostfile "$MLP_MPI_HOSTFILE" --master_addr "$MLP_WORKER_0_HOST" '
    "--no_ssh_check /workspace/algorithm/train.py --steps 6 --save-every 3'"
)
# mode, nodes, program folder, demo image, its runtime, command, a checkpoint's file pattern:
# every distributed mode on one node and on two (MPI's mpirun from the runtime's own Open
# MPI). TensorFlow's parameter-server training (tf_sample/ps_training.py) is not in it yet:
# its parameter server crashed once (SIGSEGV) under the whole suite's load.
MODES = [
    pytest.param("single", 1, samples.RESNET_TRAIN, "pytorch-2", "torch-cpu",
                 f"{TRAIN} --steps 4", "checkpoint-*.pt", id="single"),
    *(
        pytest.param("pytorch", n, samples.DDP_SAMPLE, "pytorch-2", "torch-cpu",
                     f"{TRAIN} --steps 6 --batch-size 16", "checkpoint-*.pt", id=f"pytorch-{n}")
        for n in (1, 2)
    ),
    *(
        pytest.param("tensorflow", n, samples.TF_SAMPLE, "tensorflow-2", "tensorflow-cpu",
                     f"{TRAIN} --steps 6 --save-every 3", "ckpt-*.index", id=f"tensorflow-{n}")
        for n in (1, 2)
    ),
    *(
        pytest.param("deepspeed", n, samples.DEEPSPEED_SAMPLE, "deepspeed", "deepspeed-cpu",
                     DEEPSPEED, "step-*/*", id=f"deepspeed-{n}")
        for n in (1, 2)
    ),
    *(
        pytest.param("mpi", n, samples.MPI_SAMPLE, "pytorch-2", "torch-cpu",
                     f"{TRAIN} --steps 6 --save-every 3", "checkpoint-*.pt", id=f"mpi-{n}")
        for n in (1, 2)
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "nodes", "program", "image", "runtime", "command", "saved"), MODES
)
def test_a_demo_algorithm_runs_in_its_mode(
    alice, vision, run_cluster, runtime_folder, mode, nodes, program, image, runtime, command, saved
):
    folder = runtime_folder(runtime)
    job = make_job(
        alice, vision, run_cluster["gpu"], mode=mode, nodes_asked=nodes,
        command=command, graceful_shutdown_seconds=5,
    )  # fmt: skip
    Image.objects.filter(pk=job.image_id).update(name=image, local_runtime=str(folder))
    samples.copy_program(program, storage_source(job.algorithm.path))
    admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED, Phase.ERROR, timeout=240)
    attempt = Attempt.objects.get(job=job)
    seen = {r["name"]: log_of(attempt, r["name"]) for r in attempt.replicas}
    assert job.phase == Phase.SUCCEEDED, f"{job.reason}\n" + "\n".join(seen.values())
    entry = seen[f"{job.name}-worker-0"]
    assert PERFORMANCE.search(entry), entry
    if nodes > 1 and mode != "mpi":  # under mpirun, worker 0 runs every rank
        assert re.search(r"training: 2 ", entry), entry
    outputs = storage_source(job.output_path)
    assert list(outputs.glob(saved)), sorted(p.name for p in outputs.rglob("*"))
    assert list(outputs.rglob("events.out.tfevents.*")), sorted(p.name for p in outputs.rglob("*"))
