"""Reclaim through the database, with real processes on the local backend (SPEC G2): a job
waiting within its team's guarantee gets the boards another team borrows. The borrower gets
the checkpoint signal and its graceful time, goes back to the queue without using a resume,
and waits while the claim starts; the events on both sides say who and why; the job within
its own guarantee is never touched; a claim that no victim would help stops nobody."""

from __future__ import annotations

from decimal import Decimal

import pytest

from jobs.execution import runs
from jobs.faults.reclaim import reclaim
from jobs.models import Attempt, Job, Phase
from resources.models import Quota
from tests.helpers import wait_until
from tests.jobs.execution_helpers import admit_and_launch, log_of, make_job, program
from tests.resources.factories import AcceleratorModelFactory, NodeFactory, NodeSpecFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("local_runs")]

# Saves a "checkpoint" on SIGTERM, as the demo's training scripts do, then ends.
CHECKPOINTING = """
import pathlib, signal, sys, time
def save(*_):
    print("checkpoint saved on SIGTERM", flush=True)
    sys.exit(143)
signal.signal(signal.SIGTERM, save)
print("training", flush=True)
time.sleep(600)
"""


@pytest.fixture
def shared(vision, speech):
    return two_teams_one_node(vision, speech)


def two_teams_one_node(vision, speech):
    """One node of two Demo-GPU boards; vision and speech are guaranteed one board each.
    Returns the one-board spec."""
    model = AcceleratorModelFactory(name="Demo-GPU")
    NodeFactory(name="node-a", board_count=2, accelerator_model=model)
    gpu = NodeSpecFactory(name="gpu-1", cpu_millicores=500, memory_mib=512,
                          boards=Decimal(1), accelerator_model=model)  # fmt: skip
    for project in (vision, speech):
        Quota.objects.create(project=project, accelerator_model=model, guaranteed=Decimal(1))
    return gpu


def running(job) -> Attempt:
    def started():
        runs.sync()
        job.refresh_from_db()
        assert job.phase not in (Phase.ERROR, Phase.SUCCEEDED), job.reason
        return job.phase == Phase.RUNNING

    wait_until(started, 30, 0.2)
    return job.attempts.get()


def test_a_borrower_yields_its_boards_to_a_job_within_its_team_guarantee(
    client, alice, charlie, vision, speech, shared
):
    within = make_job(alice, vision, shared, name="v-within", command="sleep 600")
    admit_and_launch()
    borrower = make_job(alice, vision, shared, name="v-borrow", resume_enabled=True,
                        max_resumes=1, graceful_shutdown_seconds=5,
                        command="python3 /workspace/algorithm/train.py")  # fmt: skip
    program(borrower, "train.py", CHECKPOINTING)
    admit_and_launch()
    first = running(borrower)
    borrower.refresh_from_db()
    assert borrower.borrowing and not Job.objects.get(pk=within.pk).borrowing
    wait_until(lambda: "training" in log_of(first), 30, 0.2)

    claim = make_job(charlie, speech, shared, name="s-claim", command="sleep 600")
    assert admit_and_launch() == []  # both boards are taken
    assert reclaim() == [first.pk]
    first.refresh_from_db()
    assert first.stop_cause == Attempt.StopCause.RECLAIM
    assert borrower.events.last().message == (
        "Its Demo-GPU boards are reclaimed for Speech, whose job s-claim waits within its "
        "guarantee; Vision runs beyond its own guarantee of 1. Its processes get SIGTERM so "
        "they save a checkpoint (killed after 5 s); then it waits in the queue and continues "
        "from its last checkpoint."
    )
    claim.refresh_from_db()
    assert claim.claiming_since is not None
    assert claim.events.last().message == (
        "Reclaiming boards for it: 1 job of Vision on borrowed boards stops (v-borrow); it "
        "starts once its boards are free."
    )
    # While the victim stops, nobody is chosen again, and vision borrows nothing more.
    assert reclaim() == []
    more = make_job(alice, vision, shared, name="v-more", command="sleep 600")
    admit_and_launch()
    more.refresh_from_db()
    assert more.phase == Phase.QUEUED
    assert more.wait_detail["yields_to"] == "Speech"
    assert "not while Speech waits within its own" in more.wait_reason
    client.force_login(charlie)
    assert 'data-testid="claiming"' in client.get("/queue/").content.decode()
    assert 'data-testid="claiming"' in client.get(f"/jobs/{claim.pk}/").content.decode()

    def requeued():
        runs.sync()
        borrower.refresh_from_db()
        return borrower.phase == Phase.QUEUED

    wait_until(requeued, 30, 0.2)
    assert "checkpoint saved on SIGTERM" in log_of(first)
    assert borrower.resubmitted and borrower.resumes_used == 0 and borrower.resubmitted_at is None
    said = list(borrower.events.order_by("pk").values_list("message", flat=True))
    assert said[-2:] == [
        "Its borrowed boards were reclaimed: back in the queue, ahead of the jobs of its "
        "priority once the team they went to has started; it continues from its last "
        "checkpoint.",
        "In the queue again.",
    ]
    # With its victim gone nobody borrows there, but the claim stays one until it starts:
    # else the victim, back at the head of its priority, could take the board back first.
    assert reclaim() == []
    claim.refresh_from_db()
    assert claim.claiming_since is not None
    # The next pass starts the claim; the borrower waits for it, and so does vision's new job.
    assert [a.job_id for a in admit_and_launch()] == [claim.pk]
    borrower.refresh_from_db()
    assert borrower.phase == Phase.QUEUED
    within.refresh_from_db()
    assert within.phase == Phase.RUNNING and within.attempts.get().stop_cause == ""
    claim.refresh_from_db()
    assert claim.claiming_since is None  # admitted: no longer a claim


def test_nobody_stops_for_a_claim_no_victim_would_help(alice, charlie, vision, speech, shared):
    Quota.objects.filter(project=speech).update(guaranteed=Decimal(2))
    for name in ("v-within", "v-borrow"):
        make_job(alice, vision, shared, name=name, command="sleep 600")
        admit_and_launch()
    # Speech may claim two boards, but on one node: stopping vision's borrower would free one
    # of them, vision's other job holds the second within vision's own guarantee.
    big = make_job(charlie, speech, shared, name="s-big", nodes_asked=1, command="sleep 600")
    big.spec_choices.update(spec=NodeSpecFactory(
        name="gpu-2", cpu_millicores=500, memory_mib=512, boards=Decimal(2),
        accelerator_model=shared.accelerator_model,
    ))  # fmt: skip
    admit_and_launch()
    assert reclaim() == []
    big.refresh_from_db()
    assert big.phase == Phase.QUEUED and big.claiming_since is None
    assert not Attempt.objects.exclude(stop_cause="").exists()
    # Its share goes to speech's next job: one board, for an hour (so that it does not delay
    # s-big, whose reservation is for when v-within ends): vision's borrower stops for it.
    make_job(charlie, speech, shared, name="s-small", duration_hours=1, command="sleep 600")
    admit_and_launch()
    assert len(reclaim()) == 1


def test_a_team_without_a_quota_borrows_all_it_runs_and_yields_to_a_guarantee(
    alice, charlie, vision, speech
):
    """Speech has no quota where Vision is guaranteed both boards: Speech is guaranteed none
    there, so what it runs is borrowed (marked, said), reclaimed for Vision, and its next job
    waits for Vision's claim instead of taking the freed board."""
    gpu = two_teams_one_node(vision, speech)
    Quota.objects.filter(project=speech).delete()
    Quota.objects.filter(project=vision).update(guaranteed=Decimal(2))
    first = make_job(charlie, speech, gpu, name="s-first", command="sleep 600")
    second = make_job(charlie, speech, gpu, name="s-second", graceful_shutdown_seconds=1,
                      command="sleep 600")  # fmt: skip
    admit_and_launch()
    for job in (first, second):
        job.refresh_from_db()
        assert job.borrowing, job.name
    assert any(
        "On borrowed boards: Speech has no guarantee of Demo-GPU boards; with it, it holds 2."
        in message
        for message in second.events.values_list("message", flat=True)
    )
    running(second)
    claim = make_job(alice, vision, gpu, name="v-claim", command="sleep 600")
    assert admit_and_launch() == []
    stopped = reclaim()
    assert len(stopped) == 1
    victim = Attempt.objects.get(pk=stopped[0]).job
    assert victim.pk == second.pk  # the newest of the same priority
    assert any(
        "Speech has no guarantee of them." in message
        for message in victim.events.values_list("message", flat=True)
    )
    more = make_job(charlie, speech, gpu, name="s-more", command="sleep 600")
    admit_and_launch()
    more.refresh_from_db()
    assert more.phase == Phase.QUEUED
    assert more.wait_reason.startswith(
        "held for the quota: Speech has no guarantee of Demo-GPU boards; it may borrow idle "
        "ones, but not while Vision waits within its own."
    ), more.wait_reason
    claim.refresh_from_db()
    assert claim.claiming_since is not None
