"""Every example of the seed documents can be submitted on the demo cluster (issue 14, point
3): none is refused as "could never start", and each gets a prediction it can keep."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from jobs.models import Job
from resources.models import Algorithm, Image, NodeSpec
from tests.helpers import give_images_runtimes

pytestmark = pytest.mark.django_db

# (name, mode, nodes, spec, parameter servers, command) as the seed documents give them.
EXAMPLES = [
    # Seed 000, Horovod: "如有一个 4机4卡 的任务式训练" (mpirun -np 16).
    ("horovod-4x4", "mpi", 4, "gpu-4", 0, "python /workspace/algorithm/train.py"),
    # Seed 000, PyTorch: "如有一个 2机4卡 的任务式训练".
    ("pytorch-2x4", "pytorch", 2, "gpu-4", 0, "python /workspace/algorithm/train.py"),
    # Seed 000, the hostfile example: 2 nodes of 4 boards, MPI.
    ("mpi-2x4", "mpi", 2, "gpu-4", 0, "python /workspace/algorithm/train.py"),
    # Seed 000, TensorFlow PS-Worker: one parameter server, two workers.
    ("tf-ps", "tensorflow", 2, "gpu-1", 1, "python /workspace/algorithm/train.py"),
    # Seed 002, DeepSpeed on several nodes.
    ("deepspeed-2x2", "deepspeed", 2, "gpu-2", 0, "python /workspace/algorithm/train.py"),
    # Seed 001, a single-node job.
    ("single", "single", 1, "gpu-1", 0, "python /workspace/algorithm/train.py"),
]


IMAGES = {"deepspeed": "deepspeed", "tensorflow": "tensorflow-2"}  # else pytorch-2


@pytest.fixture
def demo(settings, tmp_path):
    settings.DEMO_MODE = True
    call_command("seed_demo", stdout=io.StringIO())
    # Acceptance is what is tested here, not the runtimes.
    give_images_runtimes(tmp_path / "runtime")


@pytest.mark.parametrize(("name", "mode", "nodes", "spec", "ps", "command"), EXAMPLES)
def test_a_seed_example_is_accepted_on_the_demo_cluster(
    client, demo, name, mode, nodes, spec, ps, command
):
    client.force_login(get_user_model().objects.get(username="alice"))
    image = IMAGES.get(mode, "pytorch-2")
    data = {
        "name": name, "others_access": "none", "job_type": "regular", "priority": "0",
        "algorithm": Algorithm.objects.get(name="resnet-train").pk, "algorithm_read_only": "on",
        "command": command, "output_path": "", "mode": mode,
        "specs": [NodeSpec.objects.get(name=spec).pk], "node_count": str(nodes),
        "ps_count": str(ps), "image": Image.objects.get(name=image).pk,
        "graceful_shutdown_seconds": "30", "duration_hours": "24", "subtask_count": "0",
        "dataset_count": "0",
    }  # fmt: skip
    predicted = client.post("/jobs/new/predict/", data).content.decode()
    assert 'data-state="never"' not in predicted, predicted
    answer = client.post("/jobs/new/", data)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    job = Job.objects.get(name=name)
    assert job.nodes_asked == nodes and job.prediction is not None
