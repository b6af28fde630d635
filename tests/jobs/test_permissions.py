"""SPEC P: every operation for every kind of actor (owner, members by access, outsider,
admin, anonymous)."""

import pytest
from django.utils import timezone

from console.sharing import Access
from jobs.models import Job, Status
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.django_db

# actor -> the others' access the job gets (members only see it through that)
ACTORS = {
    "owner": Access.NONE,
    "member_rw": Access.READ_WRITE,
    "member_ro": Access.READ_ONLY,
    "member_none": Access.NONE,
    "outsider": Access.READ_WRITE,
    "admin": Access.NONE,
    "anonymous": Access.READ_WRITE,
}

SEE = {
    "owner": 200,
    "member_rw": 200,
    "member_ro": 200,
    "member_none": 404,
    "outsider": 404,
    "admin": 200,
    "anonymous": "login",
}
ACT = {
    "owner": "done",
    "member_rw": "done",
    "member_ro": 403,
    "member_none": 404,
    "outsider": 404,
    "admin": "done",
    "anonymous": "login",
}

OPERATIONS = [
    # name, method, path suffix, data, job status, expectations, check done
    ("view", "get", "", {}, Status.QUEUED, SEE),
    ("clone", "get", "clone/", {}, Status.QUEUED, SEE),
    ("devenv form", "get", "devenv/", {}, Status.QUEUED, SEE),
    (
        "devenv create",
        "post",
        "devenv/",
        {"name": "dev"},
        Status.QUEUED,
        {**SEE, "owner": 302, "member_rw": 302, "member_ro": 302, "admin": 302},
    ),
    ("stop", "post", "stop/", {}, Status.QUEUED, ACT),
    ("delete", "post", "delete/", {}, Status.SUCCEEDED, ACT),
    ("duration", "post", "duration/", {"hours": "48"}, Status.RUNNING, ACT),
    ("priority", "post", "priority/", {"priority": "1"}, Status.QUEUED, ACT),
    (
        "stop form",
        "get",
        "stop/",
        {},
        Status.QUEUED,
        {**ACT, "owner": 200, "member_rw": 200, "admin": 200},
    ),
]


def effect(job_pk: int, operation: str) -> bool:
    job = Job.objects.filter(pk=job_pk).first()
    return {
        "stop": lambda: job.status == Status.STOPPED,
        "delete": lambda: job is None,
        "duration": lambda: job.duration_hours == 48,
        "priority": lambda: job.priority == 1,
    }[operation]()


@pytest.mark.parametrize("actor", ACTORS)
@pytest.mark.parametrize(
    ("operation", "method", "suffix", "data", "status", "expected"),
    OPERATIONS,
    ids=[o[0] for o in OPERATIONS],
)
def test_matrix(
    client,
    request,
    alice,
    bob,
    charlie,
    admin,
    actor,
    operation,
    method,
    suffix,
    data,
    status,
    expected,
):
    phase = {"queued": "queued", "running": "running", "succeeded": "succeeded"}[status]
    job = JobFactory(
        owner=alice,
        project=alice.memberships.get().project,
        others_access=ACTORS[actor],
        status=status,
        phase=phase,
        started_at=timezone.now(),
    )
    user = {
        "owner": alice,
        "member_rw": bob,
        "member_ro": bob,
        "member_none": bob,
        "outsider": charlie,
        "admin": admin,
        "anonymous": None,
    }[actor]
    if user:
        client.force_login(user)
    response = getattr(client, method)(f"/jobs/{job.pk}/{suffix}", data)
    want = expected[actor]
    if want == "login":
        assert response.status_code == 302 and response["Location"].startswith("/login/")
    elif want == "done":
        assert response.status_code == 302, response.status_code
        assert effect(job.pk, operation), f"{operation} did not happen for {actor}"
    else:
        assert response.status_code == want
        if (
            want in (403, 404)
            and method == "post"
            and operation in {"stop", "delete", "duration", "priority"}
        ):
            assert not effect(job.pk, operation), f"{operation} happened for {actor}"


def test_list_shows_what_each_may_see(client, alice, bob, charlie, vision):
    JobFactory(owner=alice, project=vision, name="shared", others_access=Access.READ_ONLY)
    JobFactory(owner=alice, project=vision, name="private", others_access=Access.NONE)
    for user, names in [(alice, {"shared", "private"}), (bob, {"shared"}), (charlie, set())]:
        client.force_login(user)
        table = client.get("/jobs/").context["table"]
        assert {row.record.name for row in table.page.object_list} == names
