"""SPEC J24: the prediction beside Create, its refusal of jobs that can never start, and the
record kept at submit; /queue/ for leads."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from console.sharing import Access
from jobs.admission.db import run_pass
from jobs.models import Job, JobPrediction, Phase, Priority
from resources.models import Node
from tests.jobs.factories import JobFactory
from tests.resources.factories import (
    AcceleratorModelFactory,
    AllocationFactory,
    NodeFactory,
    NodeSpecFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(alice, vision, inventory):
    # Only these two 4-board nodes: the job fixtures' other nodes are retired.
    Node.objects.update(retired_at=timezone.now())
    a100 = AcceleratorModelFactory(name="A100")
    nodes = [NodeFactory(name=f"g{i}", board_count=4, accelerator_model=a100) for i in range(2)]
    spec4 = NodeSpecFactory(
        name="a100x4",
        boards=Decimal(4),
        accelerator_model=a100,
        cpu_millicores=1000,
        memory_mib=1024,
    )
    spec8 = NodeSpecFactory(name="a100x8", boards=Decimal(8), accelerator_model=a100)
    return {"a100": a100, "nodes": nodes, "spec4": spec4, "spec8": spec8}


def predict(client, job_post, **overrides):
    body = client.post("/jobs/new/predict/", job_post(**overrides)).content.decode()
    return " ".join(body.split())


def test_no_spec_yet(client, alice, job_post):
    client.force_login(alice)
    assert "Pick a spec" in predict(client, job_post, specs=None)


def test_starts_now(client, alice, job_post, cluster):
    client.force_login(alice)
    text = predict(client, job_post, specs=[cluster["spec4"].pk], image=job_post()["image"])
    assert 'data-state="now"' in text and "Starts now on a100x4" in text


def test_will_queue_with_reason_blockers_and_alternatives(client, alice, vision, job_post, cluster):
    running = JobFactory(
        owner=alice,
        project=vision,
        name="hog",
        status="running",
        phase="running",
        started_at=timezone.now(),
        deadline=timezone.now() + timedelta(hours=3),
    )
    AllocationFactory(node=cluster["nodes"][0], holder_id=running.pk, slots=[0, 1, 2, 3])
    AllocationFactory(node=cluster["nodes"][1], holder_id=running.pk, slots=[0, 1])
    client.force_login(alice)
    text = predict(client, job_post, specs=[cluster["spec4"].pk], mode="pytorch", node_count="2")
    assert 'data-state="queue"' in text
    assert "Will queue: position 1 of 1" in text
    assert "Starts by" in text
    assert "needs 4 boards of A100 on one node; the most free on any allowed node is 2" in text
    assert f'href="/jobs/{running.pk}/"' in text and "hog" in text


def test_a_blocker_the_user_may_not_see_is_named_by_its_project_only(
    client, alice, charlie, speech, admin, job_post, cluster
):
    hidden = JobFactory(
        owner=charlie, project=speech, name="secret-run", status="running", phase="running",
        started_at=timezone.now(), deadline=timezone.now() + timedelta(hours=3),
    )  # fmt: skip
    for node in cluster["nodes"]:
        AllocationFactory(node=node, holder_id=hidden.pk, slots=[0, 1])
    client.force_login(alice)
    text = predict(client, job_post, specs=[cluster["spec4"].pk], mode="pytorch", node_count="2")
    assert "a job of project Speech" in text
    assert "secret-run" not in text and f"/jobs/{hidden.pk}/" not in text
    # An admin sees the job itself.
    client.force_login(admin)
    text = predict(client, job_post, specs=[cluster["spec4"].pk], mode="pytorch", node_count="2")
    assert f'href="/jobs/{hidden.pk}/"' in text and "secret-run" in text


def test_never_fits_is_refused_at_submit(client, alice, job_post, cluster):
    client.force_login(alice)
    data = job_post(specs=[cluster["spec8"].pk])
    assert "Can never start" in predict(client, job_post, specs=[cluster["spec8"].pk])
    response = client.post("/jobs/new/", data)
    assert response.status_code == 422
    assert "could never start" in " ".join(response.context["form"].errors["specs"])
    assert "needs 8 boards of A100 on one node; the most any allowed node has is 4" in " ".join(
        response.context["form"].errors["specs"]
    )
    assert not Job.objects.exists()


def test_prediction_is_kept_and_compared(client, alice, job_post, cluster):
    client.force_login(alice)
    response = client.post("/jobs/new/", job_post(specs=[cluster["spec4"].pk]))
    job = Job.objects.get()
    kept = JobPrediction.objects.get(job=job)
    assert kept.starts_now and kept.position == 1
    Job.objects.filter(pk=job.pk).update(started_at=kept.latest_start + timedelta(seconds=5))
    assert kept.held(Job.objects.get(pk=job.pk).started_at) is True
    assert kept.held(kept.latest_start + timedelta(minutes=5)) is False
    page = client.get(response["Location"]).content.decode()
    assert "Predicted at submit: starts at once." in page


class TestQueuePage:
    @pytest.mark.django_db(transaction=True)
    def test_each_sees_and_reorders_what_sharing_allows(self, client, alice, lead, vision):
        jobs = {
            access: JobFactory(owner=alice, project=vision, name=f"j-{i}", others_access=access)
            for i, access in enumerate(Access)
        }
        run_pass()
        client.force_login(alice)
        page = client.get("/queue/").content.decode()
        assert page.count('name="priority"') == 3  # her own: every one
        client.force_login(lead)
        page = client.get("/queue/").content.decode()
        # Not shared: not listed (a lead has no more rights than any member), but counted.
        assert 'data-job="j-0"' not in page
        assert "1 more queued job is not shared with you" in " ".join(page.split())
        assert 'data-job="j-1"' in page and 'data-job="j-2"' in page
        assert page.count('name="priority"') == 1  # the read-write one only
        expected = {Access.NONE: 404, Access.READ_ONLY: 403, Access.READ_WRITE: 302}
        for access, job in jobs.items():
            response = client.post(f"/queue/{job.pk}/priority/", {"priority": "1"})
            assert response.status_code == expected[access], access
            changed = Job.objects.get(pk=job.pk).priority == Priority.URGENT
            assert changed == (access == Access.READ_WRITE), access

    def test_other_projects_jobs_are_not_listed(self, client, alice, charlie, vision):
        JobFactory(owner=alice, project=vision, name="vision-job")
        client.force_login(charlie)
        assert 'data-job="vision-job"' not in client.get("/queue/").content.decode()

    def test_admin_sees_the_cluster(self, client, alice, admin, vision):
        JobFactory(owner=alice, project=vision, name="vision-job")
        client.force_login(admin)
        assert 'data-job="vision-job"' in client.get("/queue/").content.decode()

    def test_accuracy_over_seven_days(self, client, admin, alice, vision):
        now = timezone.now()
        for started_late, name in [(False, "ok1"), (False, "ok2"), (True, "late")]:
            job = JobFactory(
                owner=alice, project=vision, name=name, status="running", phase=Phase.RUNNING
            )
            JobPrediction.objects.create(
                job=job,
                made_at=now - timedelta(hours=1),
                starts_now=False,
                latest_start=now - timedelta(minutes=30),
                position=1,
                queue_length=1,
            )
            started = now - timedelta(minutes=10 if started_late else 40)
            Job.objects.filter(pk=job.pk).update(started_at=started)
        client.force_login(admin)
        body = " ".join(client.get("/queue/").content.decode().split())
        assert "Predictions held for 2 of 3 jobs (67%)" in body


@pytest.mark.django_db(transaction=True)
def test_reasons_are_worded_in_the_readers_language(client, alice, vision, cluster):
    from jobs.admission.words import from_json, to_json
    from jobs.scheduling.reasons import NeverFits, NoAllowedNode, Shortfall

    for reason in [
        Shortfall("boards", 8, 4, "g0", model=1),
        NeverFits(NoAllowedNode("unknown-names", ("x",))),
    ]:
        assert from_json(to_json(reason)) == reason or isinstance(reason, NeverFits)
    JobFactory(
        owner=alice,
        project=vision,
        name="big",
        nodes_asked=3,
        mode="pytorch",
        specs=[cluster["spec4"]],
    )
    run_pass()
    client.force_login(alice)
    client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    page = client.get("/queue/").content.decode()
    assert "需要" in page and "needs" not in page.split('data-job="big"')[1].split("</tr>")[0]
