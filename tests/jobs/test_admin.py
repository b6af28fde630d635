"""Jobs in Django's admin: shown to platform admins, never written there (a job moves only
through its lifecycle)."""

import pytest

from jobs import lifecycle
from jobs.models import Job, JobEvent
from tests.jobs.factories import JobFactory


@pytest.fixture
def job(alice, vision):
    job = JobFactory(owner=alice, project=vision, name="seen-in-admin")
    lifecycle.record(job, "Looked at by the admin test.")
    return job


def test_an_admin_sees_jobs_and_their_events(client, admin, job):
    client.force_login(admin)
    listing = client.get("/admin/jobs/job/")
    assert listing.status_code == 200 and "seen-in-admin" in listing.content.decode()
    page = client.get(f"/admin/jobs/job/{job.pk}/change/").content.decode()
    assert f"/admin/jobs/jobevent/?job__exact={job.pk}" in page
    assert 'name="_save"' not in page  # shown, not a form
    events = client.get(f"/admin/jobs/jobevent/?job__exact={job.pk}")
    assert events.status_code == 200 and "Looked at by the admin test." in events.content.decode()


@pytest.mark.parametrize(
    "path", ["/admin/jobs/job/add/", "/admin/jobs/job/{job}/delete/", "/admin/jobs/jobevent/add/"]
)
def test_nothing_is_added_or_deleted_there(client, admin, job, path):
    client.force_login(admin)
    assert client.post(path.format(job=job.pk), {"post": "yes"}).status_code == 403
    assert Job.objects.filter(pk=job.pk).exists()


def test_a_posted_change_is_refused(client, admin, job):
    client.force_login(admin)
    answer = client.post(f"/admin/jobs/job/{job.pk}/change/", {"name": "renamed"})
    assert answer.status_code == 403
    assert Job.objects.get(pk=job.pk).name == "seen-in-admin"
    assert JobEvent.objects.filter(job=job).count() == 1
