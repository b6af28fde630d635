"""O3–O8 beyond permissions: what each operation checks and records."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django.utils.html import escape

from console import limits, names
from jobs import operations
from jobs.models import DevEnvironment, Job, Priority, Status
from tests.jobs.factories import JobFactory
from tests.resources.factories import AllocationFactory, NodeFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(alice, vision):
    return JobFactory(
        owner=alice,
        project=vision,
        status=Status.RUNNING,
        phase="running",
        started_at=timezone.now() - timedelta(hours=2),
        duration_hours=4,
    )


def test_duration_moves_the_deadline_without_restart(running, alice):
    operations.adjust_duration(running, 24, alice)
    running.refresh_from_db()
    assert running.duration_hours == 24
    assert running.deadline == running.started_at + timedelta(hours=24)
    assert running.status == Status.RUNNING
    assert "Duration changed from 4 h to 24 h" in running.events.last().message


@pytest.mark.parametrize("hours", [0, 1, 99999])
def test_duration_refuses_what_cannot_be(running, alice, hours):
    with pytest.raises(operations.NotApplicable):
        operations.adjust_duration(running, hours, alice)


def test_duration_only_for_running_jobs(alice, vision):
    queued = JobFactory(owner=alice, project=vision)
    with pytest.raises(operations.NotApplicable, match="running"):
        operations.adjust_duration(queued, 8, alice)


def test_priority_caps_and_admin_only_very_urgent(alice, vision, admin):
    limits.save({"urgent_jobs_per_project": 1}, admin)
    first, second = JobFactory(owner=alice, project=vision), JobFactory(owner=alice, project=vision)
    operations.adjust_priority(first, Priority.URGENT, alice)
    with pytest.raises(operations.NotApplicable, match="cap is 1"):
        operations.adjust_priority(second, Priority.URGENT, alice)
    with pytest.raises(operations.NotApplicable, match="platform admins"):
        operations.adjust_priority(second, Priority.VERY_URGENT, alice)
    operations.adjust_priority(second, Priority.VERY_URGENT, admin)
    assert Job.objects.get(pk=second.pk).priority == Priority.VERY_URGENT


def test_priority_only_while_queued(running, alice):
    with pytest.raises(operations.NotApplicable, match="queued"):
        operations.adjust_priority(running, Priority.URGENT, alice)


def test_priority_refusal_is_a_message_on_the_page(client, alice, vision, admin):
    limits.save({"urgent_jobs_per_project": 0}, admin)
    job = JobFactory(owner=alice, project=vision)
    client.force_login(alice)
    response = client.post(f"/jobs/{job.pk}/priority/", {"priority": "1"}, follow=True)
    assert "the cap is 0" in response.content.decode()
    assert client.post(f"/jobs/{job.pk}/priority/", {"priority": "x"}).status_code == 302


def test_stop_a_queued_job_releases_what_it_held(alice, vision):
    job = JobFactory(owner=alice, project=vision)
    held = AllocationFactory(node=NodeFactory(), holder_id=job.pk)
    operations.stop(job, alice)
    held.refresh_from_db()
    assert Job.objects.get(pk=job.pk).status == Status.STOPPED
    assert held.released_at is not None
    with pytest.raises(operations.NotApplicable, match="already ended"):
        operations.stop(job, alice)


def test_devenv_round_trip(client, alice, vision):
    job = JobFactory(owner=alice, project=vision, command="python t.py")
    client.force_login(alice)
    response = client.post(f"/jobs/{job.pk}/devenv/", {"name": "explore"})
    env = DevEnvironment.objects.get()
    assert response["Location"] == f"/devenvs/{env.pk}/"
    assert (env.from_job, env.command, env.image) == (job, "python t.py", job.image)
    form = client.get(f"/devenvs/{env.pk}/job/").context["form"]
    assert form["command"].value() == "python t.py"
    assert form["name"].value() == "explore"


def test_someone_elses_devenv_is_404(client, alice, bob, vision):
    job = JobFactory(owner=alice, project=vision)
    env = operations.devenv_from_job(job, alice, "mine")
    client.force_login(bob)
    assert client.get(f"/devenvs/{env.pk}/").status_code == 404
    assert client.get(f"/devenvs/{env.pk}/job/").status_code == 404


@pytest.mark.parametrize("name", ["a\x00b", "two\nlines"])
def test_devenv_name_with_control_characters_is_refused_on_the_field(client, alice, vision, name):
    job = JobFactory(owner=alice, project=vision)
    client.force_login(alice)
    response = client.post(f"/jobs/{job.pk}/devenv/", {"name": name})
    assert response.status_code == 422 and not DevEnvironment.objects.exists()
    body = response.content.decode()
    assert "is-invalid" in body
    assert escape(names.DNS_LABEL.problem(name)) in body  # what a name may hold, on the field
