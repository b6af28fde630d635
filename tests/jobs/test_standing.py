"""A queued job's standing row (jobs.models.standing, migration 0022's triggers): exactly one
for each job whose status is *queued*, empty when it joins the queue, gone when it leaves,
whichever way its status changes (a save, an UPDATE of many, a pass's admission)."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest

from jobs import lifecycle
from jobs.admission.db import run_pass
from jobs.models import Job, Phase, Standing, Status
from tests.jobs.factories import JobFactory
from tests.resources.factories import AcceleratorModelFactory, NodeFactory, NodeSpecFactory

pytestmark = pytest.mark.django_db


def standing_ids() -> set[int]:
    return set(Standing.objects.values_list("job_id", flat=True))


def queued_ids() -> set[int]:
    return set(Job.objects.filter(status=Status.QUEUED).values_list("pk", flat=True))


@pytest.mark.parametrize(("before", "after"), list(itertools.product(Status.values, repeat=2)))
def test_every_change_of_status_keeps_one_standing_per_queued_job(alice, vision, before, after):
    job = JobFactory(owner=alice, project=vision, status=before)
    other = JobFactory(owner=alice, project=vision)  # queued, and left alone throughout
    assert (
        standing_ids() == queued_ids() == {other.pk} | ({job.pk} if before == "queued" else set())
    )
    Job.objects.filter(pk=job.pk).update(status=after)
    assert standing_ids() == queued_ids()
    job.status = before
    job.save()  # and back, as a save writes it
    assert standing_ids() == queued_ids()


def test_a_standing_is_empty_when_its_job_joins_the_queue(alice, vision):
    job = JobFactory(owner=alice, project=vision)
    Standing.objects.filter(job=job).update(position=3, reason="waits", blockers=[7])
    Job.objects.filter(pk=job.pk).update(status=Status.RUNNING)
    Job.objects.filter(pk=job.pk).update(status=Status.QUEUED)  # back after a fault, say
    fresh = Standing.objects.get(job=job)
    assert (fresh.position, fresh.latest_start, fresh.reason) == (None, None, "")
    assert (fresh.detail, fresh.blockers, fresh.reservation) == (None, [], None)
    assert job.queue_position is None and job.blockers == [] and job.wait_reason == ""


def test_jobs_made_many_at_once_each_get_theirs_and_a_deleted_job_takes_it_along(alice, vision):
    image = JobFactory(owner=alice, project=vision, name="first").image
    made = Job.objects.bulk_create(
        Job(owner=alice, project=vision, name=f"bulk-{i}", image=image, command="true",
            output_path="o", duration_hours=1)
        for i in range(5)
    )  # fmt: skip
    assert standing_ids() == queued_ids() and len(standing_ids()) == 6
    made[0].delete()
    assert standing_ids() == queued_ids() and made[0].pk not in standing_ids()


@pytest.mark.django_db(transaction=True)
def test_a_pass_fills_the_standing_in_and_its_admission_takes_it_away(alice, vision):
    gpu = AcceleratorModelFactory(name="A100")
    NodeFactory(name="g0", board_count=8, accelerator_model=gpu)
    spec = NodeSpecFactory(name="a100x4", boards=Decimal(4), accelerator_model=gpu,
                           cpu_millicores=1000, memory_mib=1024)  # fmt: skip
    small, big = (
        JobFactory(owner=alice, project=vision, name=name, specs=[spec], nodes_asked=n)
        for name, n in (("small", 1), ("big", 2))  # one node: the big one never fits
    )
    result = run_pass()
    assert result.admitted == [small.pk]
    assert standing_ids() == {big.pk}
    assert Job.objects.get(pk=big.pk).queue_position == 1
    assert Job.objects.get(pk=big.pk).wait_reason
    moved = lifecycle.move(Job.objects.get(pk=big.pk), Phase.STOPPED, "Stopped.")
    assert moved and standing_ids() == set()
