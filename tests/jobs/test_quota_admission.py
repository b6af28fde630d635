"""Quota maximums at admission, through the database (SPEC G1): a pass holds what would
take a team past its maximum and says why on /queue/, the job's page and the form; when the
team frees boards, the held job is let in as joining the queue then; a draft asking more than
the maximum is refused before Create."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from jobs.admission.db import run_pass
from jobs.models import Job, Phase
from resources.models import Allocation, Quota
from tests.jobs.factories import JobFactory
from tests.jobs.test_admission import spec

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def a100(inventory):
    return inventory["a100"]  # 8 boards on a shared node, 8 in vision's pool


@pytest.fixture
def capped(vision, a100):
    """Vision may hold at most 4 A100 boards (guaranteed 2)."""
    return Quota.objects.create(
        project=vision, accelerator_model=a100, guaranteed=Decimal(2), maximum=Decimal(4)
    )


def jobs_of(owner, project, a100, boards, count, name):
    one = spec(a100, boards)
    return [
        JobFactory(owner=owner, project=project, name=f"{name}-{i}", specs=[one])
        for i in range(count)
    ]


@pytest.mark.usefixtures("capped")
def test_a_team_at_its_maximum_waits_and_others_go_on(
    client, alice, charlie, vision, speech, a100, job_post
):
    first, second, third = jobs_of(alice, vision, a100, 2, 3, "v")
    other = jobs_of(charlie, speech, a100, 4, 1, "s")[0]
    later = jobs_of(charlie, speech, a100, 2, 1, "t")[0]  # no room left: waits for nodes
    result = run_pass()
    # 8 shared boards: vision gets its 4 (two jobs of 2), speech 4; vision's third waits.
    assert sorted(result.admitted) == sorted([first.pk, second.pk, other.pk])
    # Vision is guaranteed 2: its first job is within, the second on borrowed boards.
    first.refresh_from_db()
    second.refresh_from_db()
    assert not first.borrowing and second.borrowing
    assert second.events.last().message.endswith(
        "On borrowed boards: with it, Vision holds 4 A100 boards, beyond its guarantee of 2."
    )
    third.refresh_from_db()
    assert third.phase == Phase.QUEUED and third.latest_start is None
    assert third.wait_detail["kind"] == "HeldForQuota"
    assert third.wait_reason == (
        "held for the quota: Vision may hold at most 4 A100 boards, and its running jobs and "
        "the jobs ahead of this one take 4; this one asks 2. It joins the queue when they "
        "free enough."
    )
    client.force_login(alice)
    assert 'data-testid="borrowing"' in client.get(f"/jobs/{second.pk}/").content.decode()
    assert 'data-testid="borrowing"' not in client.get(f"/jobs/{first.pk}/").content.decode()
    queue = client.get("/queue/").content.decode()
    assert 'data-testid="held-for-quota"' in queue
    page = client.get(f"/jobs/{third.pk}/").content.decode()
    assert "Held for its team's quota: it gets a start time once its team has room." in page
    # A draft of vision's is told it would be held, before Create.
    draft = job_post(specs=[third.spec_choices.get().spec_id], name="draft")
    answer = client.post("/jobs/new/predict/", draft).content.decode()
    assert "held for the quota: a job of Vision ahead of this one waits for room" in answer

    later.refresh_from_db()
    assert later.latest_start is not None  # promised the first boards to free

    # One of vision's jobs ends: the held one is let in, as joining the queue now, behind
    # speech's job, which gets the boards freed as it was promised.
    Allocation.objects.live().filter(holder_id=first.pk).update(released_at=timezone.now())
    Job.objects.filter(pk=first.pk).update(phase=Phase.SUCCEEDED, status="succeeded")
    result = run_pass()
    assert result.admitted == [later.pk]
    third.refresh_from_db()
    assert third.quota_since is not None and third.quota_since > later.submitted_at
    assert third.wait_detail["kind"] != "HeldForQuota" and third.latest_start is not None
    assert third.blockers  # it starts when a job on the node ends


@pytest.mark.usefixtures("capped")
def test_a_draft_asking_more_than_the_maximum_is_refused(client, alice, a100, job_post):
    client.force_login(alice)
    response = client.post("/jobs/new/", job_post(specs=[spec(a100, 8).pk], name="too-big"))
    assert response.status_code == 422
    errors = " ".join(response.context["form"].errors["specs"])
    assert "it asks 8 A100 boards, more than Vision may ever hold at once (its maximum is 4)" in (
        errors
    )
    assert not Job.objects.filter(name="too-big").exists()


def test_the_form_says_a_job_would_start_on_borrowed_boards(
    client, alice, vision, a100, inventory, job_post
):
    Quota.objects.create(
        project=vision, accelerator_model=a100, guaranteed=Decimal(2), maximum=Decimal(8)
    )
    client.force_login(alice)
    within = client.post("/jobs/new/predict/", job_post(specs=[spec(a100, 2).pk])).content
    assert b'data-state="now"' in within and b'data-testid="borrowed"' not in within
    beyond = client.post("/jobs/new/predict/", job_post(specs=[spec(a100, 4).pk])).content
    assert b'data-state="now"' in beyond
    assert (
        "On borrowed boards: with it, Vision holds 4 A100 boards, beyond its guarantee of 2."
        in beyond.decode()
    )
    # And what happens if a team needs them back (SPEC G2), by the draft's recovery option.
    assert "starts again from the beginning later: turn on checkpoint resume" in beyond.decode()
    resuming = job_post(specs=[spec(a100, 4).pk], resume_enabled="on", max_resumes="1",
                        pool=inventory["pool"].pk)  # fmt: skip
    said = client.post("/jobs/new/predict/", resuming).content.decode()
    assert "waits in the queue, and continues from its last checkpoint" in said, said


def test_projects_without_a_quota_are_guaranteed_none_where_others_are(vision, speech, a100):
    """jobs.admission.caps: a project with no quota of its own or its department's, in a
    scope where a project is guaranteed boards, gets an implicit cap there: no guarantee,
    no maximum. Where nobody is guaranteed anything, nobody borrows."""
    from console.models import Department
    from jobs.admission.caps import caps
    from tests.factories import ProjectFactory

    assert caps() == []
    Quota.objects.create(project=vision, accelerator_model=a100, guaranteed=Decimal(0))
    assert [cap.holder for cap in caps()] == ["Vision"]  # no guarantee: nobody borrows
    Quota.objects.filter(project=vision).update(guaranteed=Decimal(2))
    research = Department.objects.create(name="Research")
    audio = ProjectFactory(slug="audio", name="Audio", department=research)
    Quota.objects.create(department=research, accelerator_model=a100, guaranteed=Decimal(0))
    implicit = [cap for cap in caps() if cap.id < 0]
    assert [(c.holder, c.projects, c.model, c.pool, c.guaranteed) for c in implicit] == [
        ("Speech", frozenset({speech.pk}), a100.pk, None, 0)
    ]  # Audio is under its department's quota
    assert audio.pk not in {p for c in implicit for p in c.projects}
