"""What ends a tool, and where one cannot start. Deleting what a tool belongs to ends the
tool: a deleted job's TensorBoard and a deleted development environment's JupyterLab are
killed and their folders removed (their rows go with the job or environment, so beat would
never find them); an environment's notebooks stay in its owner's storage. A job that ran on
a cluster whose storage the console does not see gets no TensorBoard, and is told why."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from jobs import operations
from jobs.models import DevEnvironment, Job, Tool
from jobs.tools import launch, service
from resources.catalog.mounts import storage_source
from tests.helpers import wait_until
from tests.jobs.factories import JobFactory
from tests.jobs.tools_helpers import write_scalars

pytestmark = pytest.mark.usefixtures("local_runs", "celery_worker")


def _running(tool: Tool) -> Tool:
    wait_until(lambda: service.check(tool).state != Tool.State.STARTING, timeout=90, interval=0.3)
    assert tool.state == Tool.State.RUNNING, tool.message
    assert service.answers(tool)
    return tool


def _folder(tool: Tool) -> Path:
    return Path(settings.RUNS_DIR) / tool.workload_id


def test_deleting_a_job_ends_its_tensorboard(alice, vision, tools_runtime):
    job = JobFactory(owner=alice, project=vision, status="succeeded", phase="succeeded")
    write_scalars(tools_runtime, storage_source(job.output_path), "loss", [1.0, 0.5])
    tool = _running(service.open_tensorboard(job, alice))
    assert _folder(tool).is_dir()

    operations.delete(job, alice)

    assert not Job.objects.filter(pk=job.pk).exists()
    assert not Tool.objects.filter(pk=tool.pk).exists()
    wait_until(lambda: not _folder(tool).exists(), timeout=30)
    assert not service.answers(tool)  # nothing listens on its socket any more


def test_deleting_an_environment_stops_its_jupyterlab_and_keeps_its_notebooks(
    client, alice, bob, vision, tools_runtime
):
    from tests.resources.factories import ImageFactory, NodeSpecFactory

    env = DevEnvironment.objects.create(
        name="scratchpad", owner=alice, project=vision, image=ImageFactory(),
        spec=NodeSpecFactory(),
    )  # fmt: skip
    tool = _running(service.open_jupyter(env, alice))
    notes = storage_source(launch.work_folder(env)) / "notes.txt"
    notes.write_text("kept")
    url = f"/devenvs/{env.pk}/delete/"

    client.force_login(bob)  # not his: not even seen
    assert client.get(url).status_code == 404
    assert client.post(url).status_code == 404
    client.force_login(alice)
    page = client.get(url)
    assert page.status_code == 200
    assert "Its JupyterLab is running" in page.text
    assert launch.work_folder(env) in page.text
    answer = client.post(url, follow=True)
    assert answer.redirect_chain[-1][0] == "/devenvs/"
    assert f"Development environment {env.name} deleted" in answer.text

    assert not DevEnvironment.objects.filter(pk=env.pk).exists()
    wait_until(lambda: not _folder(tool).exists(), timeout=30)
    assert not service.answers(tool)
    assert notes.read_text() == "kept"


def test_a_tensorboard_for_a_job_that_ran_on_a_cluster_says_why_it_cannot_read_it(
    client, alice, vision
):
    from jobs.models import Attempt
    from tests.resources.factories import ClusterFactory

    job = JobFactory(owner=alice, project=vision, status="succeeded", phase="succeeded")
    Attempt.objects.create(job=job, number=1, backend="kubernetes", cluster=ClusterFactory(),
                           workload_id=f"job-{job.pk}-1", state="succeeded")  # fmt: skip
    client.force_login(alice)
    answer = client.post(f"/jobs/{job.pk}/tensorboard/", follow=True)
    assert "ran on a Kubernetes cluster whose storage this console does not see" in answer.text
    assert not Tool.objects.filter(job=job).exists()
