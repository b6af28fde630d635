"""Quotas mirrored as Volcano queues (SPEC G1/G2 on Kubernetes), against the fake API
server that checks every Queue against Volcano's own CRD schema: one queue per project and
department with a quota of the cluster's boards, the projects' under their department's;
kept in step as quotas change, the admin's own queues left alone; a job of a project with a
mirrored queue is submitted to it."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.models import Department, Project
from resources.backends.kubernetes.queues import QueueSpec, queue_name, render
from resources.backends.kubernetes.schema import problems
from resources.models import AcceleratorModel, Cluster, Quota
from resources.queue_mirror import mirror, project_queue, wanted
from resources.tasks import mirror_queues
from tests.resources.k8s_fake import HAVE_CRDS
from tests.resources.k8s_fake.crds import queue_schema

pytestmark = pytest.mark.skipif(
    not HAVE_CRDS, reason="Volcano's CRDs are not beside the checkout (shared/k8s/crds)"
)


NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SLUG = st.from_regex(r"^[-a-zA-Z0-9_]{1,63}$", fullmatch=True)


def test_a_slug_that_is_a_valid_name_is_the_queues_name():
    assert queue_name("project", "vision") == "console-vision"
    assert queue_name("department", "research") == "console-dept-research"


def test_any_other_slug_is_cleaned_and_marked_as_its_own():
    lab = queue_name("department", "Research_Lab")
    assert re.fullmatch(r"console-dept-research-lab-h[0-9a-f]{8}", lab)
    assert re.fullmatch(r"console-h[0-9a-f]{8}", queue_name("project", "__"))
    assert len(queue_name("project", "a" * 90)) <= 63
    # Each of these would have been another holder's queue.
    assert queue_name("project", "Vision_A") != queue_name("project", "vision-a")
    assert queue_name("project", "dept-x") != queue_name("department", "x")
    assert queue_name("project", "a" * 56) != queue_name("project", "a" * 57)
    hashed = queue_name("project", "Vision_A").removeprefix("console-")
    assert queue_name("project", hashed) != queue_name("project", "Vision_A")


def near(slug: str) -> list[str]:
    """Slugs most likely to be cleaned into the same name as ``slug``."""
    hashed = queue_name("project", slug).removeprefix("console-")
    return [slug.upper(), slug.lower(), slug.replace("-", "_"), slug.replace("_", "-"),
            f"dept-{slug}", f"{slug}a", slug[:-1] or "b", f"-{slug}", hashed]  # fmt: skip


KINDS = st.sampled_from(("project", "department"))


@given(KINDS, SLUG, KINDS, st.data())
def test_two_holders_never_share_a_queue_and_every_name_is_valid(kind, slug, other_kind, data):
    other = data.draw(st.one_of(st.sampled_from(near(slug)), SLUG))
    name = queue_name(kind, slug)
    assert NAME.match(name) and len(name) <= 63, name
    assert name == queue_name(kind, slug)  # the same holder always gets the same queue
    if (kind, slug) != (other_kind, other):
        assert name != queue_name(other_kind, other)


def test_a_rendered_queue_fits_volcanos_schema():
    child = render(QueueSpec("console-vision", 2.5, 8.25, parent="console-dept-r"),
                   "nvidia.com/gpu")  # fmt: skip
    assert problems(child, queue_schema()) == []
    assert child["spec"] == {
        "weight": 1,
        "reclaimable": False,  # the console reclaims, with the checkpoint signal
        "deserved": {"nvidia.com/gpu": "2"},
        "guarantee": {"resource": {"nvidia.com/gpu": "2"}},
        "capability": {"nvidia.com/gpu": "9"},
        "parent": "console-dept-r",
    }
    unbounded = render(QueueSpec("console-speech", 1), "nvidia.com/gpu")
    assert "capability" not in unbounded["spec"] and "parent" not in unbounded["spec"]
    assert problems(unbounded, queue_schema()) == []


@pytest.fixture
def quotas(cluster, vision, speech):
    a100 = AcceleratorModel.objects.get(name="A100")
    research = Department.objects.create(name="Research", slug="research")
    Project.objects.filter(pk=vision.pk).update(department=research)
    Quota.objects.create(department=research, accelerator_model=a100, guaranteed=6)
    Quota.objects.create(project=vision, accelerator_model=a100, guaranteed=4,
                         maximum=Decimal("6.5"))  # fmt: skip
    Quota.objects.create(project=speech, accelerator_model=a100, guaranteed=2)
    other = AcceleratorModel.objects.create(name="H100")  # no node of the cluster has one
    Quota.objects.create(project=speech, accelerator_model=other, guaranteed=8)
    return research


def queues(fake) -> dict[str, dict]:
    return {q["metadata"]["name"]: q["spec"] for q in fake.objects("", "queues")}


def test_the_quotas_become_the_clusters_queues_and_follow_them(
    client, admin, fake, cluster, quotas, speech
):
    assert [(s.name, s.guaranteed, s.maximum, s.parent) for s in wanted(cluster)] == [
        ("console-dept-research", 6.0, None, ""),
        ("console-speech", 2.0, None, ""),  # its H100 quota: no such board here
        ("console-vision", 4.0, 6.5, "console-dept-research"),
    ]
    mine = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": "admins-own"}, "spec": {"weight": 3}}  # fmt: skip
    fake.store.add("queues", mine)
    done = mirror(cluster)
    assert sorted(done.created) == ["console-dept-research", "console-speech", "console-vision"]
    found = queues(fake)
    assert found["console-vision"]["capability"] == {"nvidia.com/gpu": "7"}
    assert found["console-vision"]["parent"] == "console-dept-research"
    cluster.refresh_from_db()
    assert cluster.mirrored_queues == sorted(done.created) and cluster.queues_problem == ""
    client.force_login(admin)
    page = client.get("/settings/quotas/").content.decode()
    assert "<code>console-vision</code>" in page and "mirrored" in page
    # A quota changes, another goes: the queues follow; the admin's own is left alone.
    Quota.objects.filter(project=speech, accelerator_model__name="A100").update(guaranteed=3)
    Quota.objects.filter(project__slug="vision").delete()
    done = mirror(cluster)
    assert (done.updated, done.deleted) == (["console-speech"], ["console-vision"])
    assert queues(fake)["console-speech"]["deserved"] == {"nvidia.com/gpu": "3"}
    assert "admins-own" in queues(fake)
    assert mirror(cluster).kept == ["console-dept-research", "console-speech"]


def test_a_cluster_that_cannot_take_them_says_why(client, admin, fake, cluster, quotas):
    fake.volcano = False
    assert mirror_queues() == {
        cluster.name: "failed: Volcano is not installed on the cluster (no "
        "queues.scheduling.volcano.sh)"
    }
    cluster.refresh_from_db()
    assert "Volcano is not installed" in cluster.queues_problem and not cluster.mirrored_queues
    client.force_login(admin)
    page = client.get("/settings/quotas/").content.decode()
    assert "queues not mirrored: Volcano is not installed" in page


def test_a_job_of_a_project_with_a_mirrored_queue_is_submitted_to_it(
    fake, cluster, quotas, vision, speech, alice
):
    from tests.jobs.execution_helpers import admit_and_launch, make_job
    from tests.jobs.k8s_cluster import gpu_spec

    mirror(cluster)
    assert project_queue(vision, "gpu-01") == "console-vision"
    Cluster.objects.filter(pk=cluster.pk).update(mirrored_queues=["console-dept-research"])
    assert project_queue(vision, "gpu-01") == ""  # not mirrored (yet): the cluster's queue
    mirror(cluster)
    job = make_job(alice, vision, gpu_spec(), pool=cluster.default_pool)
    (attempt,) = admit_and_launch()
    (submitted,) = fake.objects("ml", "jobs")
    assert submitted["spec"]["queue"] == "console-vision"
    assert attempt.job_id == job.pk
