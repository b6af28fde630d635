"""Idle capacity (SPEC G5): a running job below the admin's utilisation threshold for the
admin's minutes is warned once (event, email); boards' use counts where it is reported, else
CPU against what the job asked; with the "stop" policy it is stopped with the checkpoint
signal and ends as stopped, saying why."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from console import limits
from jobs.faults import idle
from jobs.models import Attempt, Job, Phase, UsageSample
from tests.jobs.execution_helpers import admit_and_launch, make_job, wait_for_phase
from tests.jobs.factories import JobFactory
from tests.jobs.test_elastic_growth import running_on
from tests.resources.factories import NodeFactory

pytestmark = pytest.mark.django_db(transaction=True)


def used(attempt, *cpu, boards=None, minutes=40):
    """Samples of the attempt's last ``minutes``, one every ten minutes."""
    now = timezone.now()
    Attempt.objects.filter(pk=attempt.pk).update(running_at=now - timedelta(minutes=minutes))
    for i, percent in enumerate(cpu):
        UsageSample.objects.create(attempt=attempt, replica="worker-0", memory_mib=10,
                                   at=now - timedelta(minutes=10 * (i + 1)),
                                   cpu_percent=percent, accelerator_util=boards)  # fmt: skip


def test_an_idle_job_is_warned_once_and_a_busy_one_never(
    alice, vision, run_cluster, mailoutbox
):  # fmt: skip
    node = NodeFactory(name="node-x", cpu_millicores=64000)
    spec = run_cluster["cpu"]  # one CPU asked per replica
    jobs = {}
    for name in ("quiet", "busy", "boards-busy", "young"):
        job = JobFactory(owner=alice, project=vision, name=name, specs=[spec])
        Job.objects.filter(pk=job.pk).update(spec=spec)
        jobs[name] = running_on(node, job)
    used(jobs["quiet"], 2.0, 3.0)  # 2.5 % of its one CPU
    used(jobs["busy"], 80.0, 95.0)
    used(jobs["boards-busy"], 1.0, 1.0, boards=60.0)  # its boards work: not idle
    used(jobs["young"], 1.0, 1.0, minutes=10)  # not yet run for the whole window
    assert idle.watch() == [jobs["quiet"].pk]
    quiet = Job.objects.get(name="quiet")
    assert quiet.events.last().message == (
        "Its CPUs were used 2.5% on average over the last 30 minutes, below the idle "
        "threshold of 5%. Nothing is done to it: if it does not need its boards now, stop it "
        "so that others get them."
    )
    (mail,) = mailoutbox
    assert mail.subject == "Job quiet: idle" and mail.to == [alice.email]
    assert "What was seen: Its CPUs were used 2.5% on average" in mail.body
    # Once per run, whoever looks.
    assert idle.watch() == []
    assert len(mailoutbox) == 1
    assert Attempt.objects.get(pk=jobs["quiet"].pk).stop_cause == ""


def test_the_watch_is_off_at_a_threshold_of_zero(alice, vision, run_cluster, admin):
    node = NodeFactory(name="node-x", cpu_millicores=64000)
    job = JobFactory(owner=alice, project=vision, specs=[run_cluster["cpu"]])
    Job.objects.filter(pk=job.pk).update(spec=run_cluster["cpu"])
    used(running_on(node, job), 0.0, 0.0)
    limits.save({"idle_utilisation_percent": 0}, admin)
    assert idle.watch() == []
    limits.save({"idle_utilisation_percent": 1}, admin)
    assert len(idle.watch()) == 1


@pytest.mark.usefixtures("local_runs")
def test_with_the_stop_policy_an_idle_job_ends_as_stopped(alice, vision, run_cluster, admin):
    limits.save({"idle_policy": "stop"}, admin)
    job = make_job(alice, vision, run_cluster["cpu"], command="sleep 600",
                   graceful_shutdown_seconds=3)  # fmt: skip
    admit_and_launch()
    wait_for_phase(job, Phase.RUNNING)
    attempt = job.attempts.get()
    used(attempt, 0.0, 0.1)
    assert idle.watch() == [attempt.pk]
    attempt.refresh_from_db()
    assert attempt.stop_cause == Attempt.StopCause.IDLE
    wait_for_phase(job, Phase.STOPPED)
    said = list(job.events.order_by("pk").values_list("message", flat=True))
    assert any("It is stopped so that others get its boards (SIGTERM" in m for m in said)
    assert said[-1] == "Stopped as idle: every process has ended."


def test_the_job_list_page_and_api_show_which_running_jobs_were_found_idle(
    client, alice, vision, run_cluster
):
    node = NodeFactory(name="node-x", cpu_millicores=64000)
    spec = run_cluster["cpu"]
    attempts = {}
    for name in ("quiet", "busy"):
        job = JobFactory(owner=alice, project=vision, name=name, specs=[spec])
        Job.objects.filter(pk=job.pk).update(spec=spec)
        attempts[name] = running_on(node, job)
    used(attempts["quiet"], 2.0, 3.0)
    used(attempts["busy"], 80.0, 95.0)
    idle.watch()
    quiet, busy = Job.objects.get(name="quiet"), Job.objects.get(name="busy")
    client.force_login(alice)

    def badges(html: str) -> list[str]:
        return [
            row.split('href="/jobs/')[1].split("/")[0]
            for row in html.split("<tr>")[1:]
            if 'data-testid="idle"' in row
        ]

    assert badges(client.get("/jobs/").content.decode()) == [str(quiet.pk)]
    page = client.get(f"/jobs/{quiet.pk}/").content.decode()
    assert 'data-testid="idle"' in page and "Found idle at" in page
    assert 'data-testid="idle"' not in client.get(f"/jobs/{busy.pk}/").content.decode()
    answer = client.get("/api/v1/jobs").json()
    found = {job["name"]: job["idle_since"] for job in answer["jobs"]}
    assert found["quiet"] is not None and found["busy"] is None
    assert client.get(f"/api/v1/jobs/{quiet.pk}").json()["idle_since"] == found["quiet"]

    # The warning belongs to that run: once it has ended, the badge goes.
    Attempt.objects.filter(pk=attempts["quiet"].pk).update(ended_at=timezone.now())
    assert badges(client.get("/jobs/").content.decode()) == []
    assert client.get(f"/api/v1/jobs/{quiet.pk}").json()["idle_since"] is None
