import re
from decimal import Decimal

import pytest

from jobs.models import Mode
from tests.jobs.factories import JobFactory
from tests.resources.factories import AcceleratorModelFactory, NodeSpecFactory

pytestmark = pytest.mark.django_db


def test_detail_shows_config_workspace_launch_and_events(client, alice, vision):
    spec = NodeSpecFactory(
        name="a100x4", boards=Decimal(4), accelerator_model=AcceleratorModelFactory()
    )
    job = JobFactory(
        owner=alice,
        project=vision,
        name="hvd",
        mode=Mode.MPI,
        nodes_asked=4,
        specs=[spec],
        command="python /workspace/algorithm/train.py",
    )
    client.force_login(alice)
    body = client.get(f"/jobs/{job.pk}/").content.decode()
    seen = re.sub(r"<[^>]+>", "", body)  # a command is drawn word by word
    assert "mpirun --allow-run-as-root -np 16 --bind-to none --map-by slot" in seen
    assert "Waits as a peer" in body  # workers 1..3 do not run the entry command
    assert "/etc/mpi/hostfile" in body and "hvd-worker-3 slots=4" in body
    assert "/workspace/algorithm" in body and "/workspace/outputs" in body
    assert "Horovod / MPI" in body


def test_detail_of_a_job_that_cannot_plan_still_renders(client, alice, vision):
    job = JobFactory(owner=alice, project=vision, command="", mode=Mode.SINGLE)
    client.force_login(alice)
    assert client.get(f"/jobs/{job.pk}/").status_code == 200
