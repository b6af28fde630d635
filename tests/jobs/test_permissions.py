"""SPEC P, generated: every address that takes a job or a development environment, for every
kind of actor and every level of others' access.

What each actor must get follows from two rules, not from a hand-written table:

* **see** (details, live parts, logs, usage, clone, dev environment from it): the owner and
  admins; members of the job's project when it is shared read-only or read-write. Anyone
  else gets 404, as if the job did not exist.
* **act** (stop, delete, duration, priority — on the job's page or the queue's): the owner
  and admins; members when it is shared read-write. A member who may see it gets 403; one
  who may not, 404. A lead has no more rights than any member (SPEC P names no role).

Anonymous visitors are sent to log in. A refused write changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from django.utils import timezone

from console.sharing import Access
from jobs.models import Attempt, DevEnvironment, Job, Status
from tests.helpers import check_answer
from tests.jobs.factories import JobFactory
from tests.resources.factories import ImageFactory, NodeSpecFactory

pytestmark = pytest.mark.django_db

ROLES = ("owner", "member", "lead", "outsider", "admin", "anonymous")
SHARING = tuple(Access)
LOGIN = "login"


def expected(role: str, sharing: Access, kind: str) -> str:
    """ "ok", "login" or the refusal's status code, from SPEC P's two rules."""
    if role == "anonymous":
        return LOGIN
    if role in ("owner", "admin"):
        return "ok"
    if role == "outsider" or sharing == Access.NONE:
        return "404"
    if kind == "see":
        return "ok"
    return "ok" if sharing == Access.READ_WRITE else "403"


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    path: str  # "{pk}" is the job's id
    kind: str  # "see" or "act"
    ok: int = 200  # the status of an allowed request
    data: dict = field(default_factory=dict)
    status: str = Status.QUEUED  # the job's status for the request to apply
    effect: str = ""  # what an allowed write does (checked both ways)


ENDPOINTS = [
    Endpoint("detail", "get", "/jobs/{pk}/", "see"),
    Endpoint("live", "get", "/jobs/{pk}/live/?phase=running", "see", status=Status.RUNNING),
    Endpoint("logs", "get", "/jobs/{pk}/logs/", "see", status=Status.RUNNING),
    Endpoint("logs more", "get", "/jobs/{pk}/logs/more/?offset=0", "see", status=Status.RUNNING),
    Endpoint("log download", "get", "/jobs/{pk}/logs/download/", "see", status=Status.RUNNING),
    Endpoint("usage", "get", "/jobs/{pk}/usage/", "see", status=Status.RUNNING),
    Endpoint("outputs", "get", "/jobs/{pk}/outputs/", "see"),
    Endpoint("clone form", "get", "/jobs/{pk}/clone/", "see"),
    Endpoint("clone submit", "post", "/jobs/{pk}/clone/", "see", ok=422, data={"name": "x y"}),
    Endpoint("devenv form", "get", "/jobs/{pk}/devenv/", "see"),
    Endpoint(
        "devenv create", "post", "/jobs/{pk}/devenv/", "see", 302, {"name": "dev"}, effect="devenv"
    ),
    Endpoint("stop form", "get", "/jobs/{pk}/stop/", "act"),
    Endpoint("stop", "post", "/jobs/{pk}/stop/", "act", 302, effect="stopped"),
    Endpoint("delete form", "get", "/jobs/{pk}/delete/", "act", status=Status.SUCCEEDED),
    Endpoint(
        "delete",
        "post",
        "/jobs/{pk}/delete/",
        "act",
        302,
        status=Status.SUCCEEDED,
        effect="deleted",
    ),
    Endpoint(
        "duration",
        "post",
        "/jobs/{pk}/duration/",
        "act",
        302,
        {"hours": "48"},
        Status.RUNNING,
        effect="duration",
    ),
    Endpoint(
        "priority", "post", "/jobs/{pk}/priority/", "act", 302, {"priority": "1"}, effect="priority"
    ),
    Endpoint(
        "queue priority",
        "post",
        "/queue/{pk}/priority/",
        "act",
        302,
        {"priority": "1"},
        effect="priority",
    ),
]

EFFECTS = {
    "stopped": lambda job, pk: job is not None and job.status == Status.STOPPED,
    "deleted": lambda job, pk: job is None,
    "duration": lambda job, pk: job is not None and job.duration_hours == 48,
    "priority": lambda job, pk: job is not None and job.priority == 1,
    "devenv": lambda job, pk: DevEnvironment.objects.filter(from_job_id=pk).exists(),
}


def a_job(owner, project, sharing: Access, status: str, runs) -> Job:
    """A job in ``status`` whose attempt has a real log in the local backend's runs folder."""
    job = JobFactory(
        owner=owner, project=project, others_access=sharing, status=status, phase=status,
        started_at=timezone.now(),
    )  # fmt: skip
    if status != Status.QUEUED:
        workload = f"job-{job.pk}-1"
        Attempt.objects.create(
            job=job, number=1, backend="local", workload_id=workload,
            replicas=[{"name": "worker-0", "label": "worker 0", "node": "n", "runs_entry": True}],
        )  # fmt: skip
        folder = runs / workload
        (folder / "worker-0").mkdir(parents=True)
        (folder / "workload.json").write_text(json.dumps({"id": workload}))
        (folder / "worker-0" / "log.txt").write_text("epoch 1\n")
    return job


@pytest.mark.parametrize("sharing", SHARING, ids=[s.value for s in SHARING])
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=[e.name for e in ENDPOINTS])
def test_matrix(client, settings, tmp_path, actors, vision, endpoint, role, sharing):
    settings.RUNS_DIR = tmp_path / "runs"
    job = a_job(actors["owner"], vision, sharing, endpoint.status, settings.RUNS_DIR)
    if actors[role] is not None:
        client.force_login(actors[role])
    response = getattr(client, endpoint.method)(endpoint.path.format(pk=job.pk), endpoint.data)
    want = expected(role, sharing, endpoint.kind)
    check_answer(response, want, endpoint.ok)
    if endpoint.effect:
        happened = EFFECTS[endpoint.effect](Job.objects.filter(pk=job.pk).first(), job.pk)
        assert happened == (want == "ok"), f"{endpoint.name} by {role} on {sharing}"


# --- development environments: private to their owner (and admins) ------------------------

DEVENV_EXPECTED = {
    "owner": "ok",
    "member": 404,
    "lead": 404,
    "outsider": 404,
    "admin": "ok",
    "anonymous": LOGIN,
}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("path", ["/devenvs/{pk}/", "/devenvs/{pk}/job/"])
def test_devenv_matrix(client, actors, vision, role, path):
    env = DevEnvironment.objects.create(
        name="dev", owner=actors["owner"], project=vision, image=ImageFactory(),
        spec=NodeSpecFactory(),
    )  # fmt: skip
    if actors[role] is not None:
        client.force_login(actors[role])
    response = client.get(path.format(pk=env.pk))
    check_answer(response, DEVENV_EXPECTED[role], 200)


def test_list_shows_what_each_may_see(client, alice, bob, charlie, vision):
    JobFactory(owner=alice, project=vision, name="shared", others_access=Access.READ_ONLY)
    JobFactory(owner=alice, project=vision, name="private", others_access=Access.NONE)
    for user, names in [(alice, {"shared", "private"}), (bob, {"shared"}), (charlie, set())]:
        client.force_login(user)
        page = client.get("/jobs/").context["page"]
        assert {job.name for job in page.rows} == names
