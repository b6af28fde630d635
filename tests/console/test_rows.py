"""console.rows: many rows in one statement, every kind of column read back as it was."""

from datetime import UTC, datetime

import pytest

from console import rows
from jobs.models import Job, JobEvent
from resources.models import Allocation
from tests.jobs.factories import JobFactory
from tests.resources.factories import NodeFactory


@pytest.mark.django_db
def test_inserted_rows_read_back_as_given_with_defaults_filled_in(alice, vision):
    node, job = NodeFactory(name="n1"), JobFactory(owner=alice, project=vision)
    at = datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
    count = rows.insert(JobEvent, [
        {"job_id": job.pk, "at": at, "phase": "queued", "message": "one", "said": {"a": [1]}},
        {"job_id": job.pk, "at": at, "phase": "queued", "message": "two", "said": None},
    ])  # fmt: skip
    assert count == 2
    one, two = JobEvent.objects.filter(job=job).order_by("message")
    assert (one.at, one.said, one.kind, one.item, one.actor_id) == (
        at,
        {"a": [1]},
        "info",
        "",
        None,
    )
    assert two.said is None
    before = datetime.now(UTC)
    rows.insert(Allocation, [{"node_id": node.pk, "holder_id": job.pk, "label": "x",
                              "cpu_millicores": 1, "memory_mib": 2, "slots": [3, 0]}])  # fmt: skip
    held = Allocation.objects.get()
    assert (held.slots, held.holder_kind, held.released_at) == ([3, 0], "job", None)
    assert held.created_at >= before
    assert rows.insert(Allocation, []) == 0


@pytest.mark.django_db
def test_updated_rows_each_get_their_own_values(alice, vision):
    jobs = [JobFactory(owner=alice, project=vision) for _ in range(3)]
    at = datetime(2026, 5, 1, 12, 0, 0, 654321, tzinfo=UTC)
    fields = ("nodes_granted", "admitted_at", "node_names", "reason_said")
    changed = rows.update(Job, {
        jobs[0].pk: dict(zip(fields, (2, at, ["n7"], None), strict=True)),
        jobs[1].pk: dict(zip(fields, (5, None, [], {"s": 1}), strict=True)),
    })  # fmt: skip
    assert changed == 2
    first, second, third = (Job.objects.get(pk=job.pk) for job in jobs)
    assert (first.nodes_granted, first.admitted_at, first.node_names) == (2, at, ["n7"])
    assert (second.nodes_granted, second.admitted_at, second.reason_said) == (5, None, {"s": 1})
    assert (third.nodes_granted, third.node_names) == (jobs[2].nodes_granted, jobs[2].node_names)


@pytest.mark.django_db
def test_what_the_table_cannot_hold_is_refused_before_anything_is_written(alice, vision):
    job = JobFactory(owner=alice, project=vision)
    with pytest.raises(ValueError, match="no field colour"):
        rows.insert(JobEvent, [{"job_id": job.pk, "message": "m", "colour": "red"}])
    with pytest.raises(ValueError, match="same fields"):
        rows.update(Job, {job.pk: {"nodes_granted": 1}, job.pk + 1: {"priority": 1}})
    with pytest.raises(TypeError, match="not a column value"):
        rows.insert(JobEvent, [{"job_id": job.pk, "message": object()}])
    assert not JobEvent.objects.filter(message="m").exists()
