"""The ledger (SPEC G4): what an admission records of its allocations, and usage summed from
the intervals in the database, against the same sums worked out in Python."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.admission.db import run_pass
from jobs.models import Job, Phase
from resources.models import Allocation
from resources.usage import usage_in
from tests.jobs.factories import JobFactory
from tests.resources.factories import (
    AcceleratorModelFactory,
    NodeFactory,
    NodeSpecFactory,
    ResourcePoolFactory,
    held,
)

T0 = datetime(2026, 3, 30, 22, 0, tzinfo=UTC)  # late on a Monday, two days before April


@pytest.mark.django_db(transaction=True)
def test_an_admission_records_who_where_and_how_many_boards(alice, vision):
    model = AcceleratorModelFactory(name="A100")
    pool = ResourcePoolFactory(name="vision-only")
    pool.projects.add(vision)
    NodeFactory(name="sliced", board_count=2, slices_per_board=4, accelerator_model=model,
                pool=pool)  # fmt: skip
    quarter = NodeSpecFactory(name="quarter", boards=Decimal("0.25"), accelerator_model=model,
                           cpu_millicores=1000, memory_mib=1024)  # fmt: skip
    job = JobFactory(owner=alice, project=vision, nodes_asked=1, specs=[quarter], pool=pool)

    assert run_pass().admitted == [job.pk], Job.objects.get(pk=job.pk).wait_reason
    allocation = Allocation.objects.get(holder_id=job.pk)
    assert (allocation.owner, allocation.project, allocation.pool) == (alice, vision, pool)
    assert len(allocation.slots) == 1 and allocation.boards == Decimal("0.25")
    assert Job.objects.get(pk=job.pk).phase == Phase.ADMITTED


def reference(intervals, start, end, now, unit):
    """{(bucket start or None, project): (board-, CPU core-, memory GiB-hours)}, summed
    interval by interval."""

    def buckets():
        if unit is None:
            yield None, start, end
            return
        at = start.replace(hour=0, minute=0, second=0, microsecond=0)
        if unit == "week":
            at -= timedelta(days=at.weekday())
        if unit == "month":
            at = at.replace(day=1)
        while at < end:
            if unit == "month":
                after = (at.replace(day=28) + timedelta(days=4)).replace(day=1)
            else:
                after = at + timedelta(days=1 if unit == "day" else 7)
            yield at, max(at, start), min(after, end)
            at = after

    sums = {}
    for created, released, boards, cpu, memory, project in intervals:
        held_per_hour = (Decimal(boards), Decimal(cpu) / 1000, Decimal(memory) / 1024)
        for bucket, lo, hi in buckets():
            seconds = (min(released or now, hi) - max(created, lo)).total_seconds()
            if seconds > 0:
                before = sums.get((bucket, project), (0, 0, 0))
                sums[bucket, project] = tuple(
                    sum_ + amount * Decimal(seconds) / 3600
                    for sum_, amount in zip(before, held_per_hour, strict=True)
                )
    thousandth = Decimal("0.001")
    return {key: tuple(Decimal(v).quantize(thousandth) for v in hours)
            for key, hours in sums.items()}  # fmt: skip


hours = st.integers(0, 24 * 40).map(lambda h: T0 + timedelta(minutes=30 * h))
interval = st.tuples(
    hours,
    st.none() | st.integers(1, 24 * 20),
    st.sampled_from(("0", "0.25", "1", "8")),
    st.sampled_from((0, 500, 1000, 64000)),  # CPU millicores
    st.sampled_from((0, 512, 1024, 1_048_576)),  # memory MiB
    st.sampled_from((0, 1)),
)


@pytest.mark.django_db
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    rows=st.lists(interval, max_size=8),
    period=st.tuples(hours, hours),
    unit=st.sampled_from((None, "day", "week", "month")),
    late=st.integers(0, 24 * 60),
)
def test_usage_is_every_interval_clipped_to_the_period_and_its_bucket(
    vision, speech, rows, period, unit, late
):
    Allocation.objects.all().delete()
    projects = [vision, speech]
    node = NodeFactory()
    now = T0 + timedelta(minutes=30 * late)
    intervals = []
    for created, length, boards, cpu, memory, which in rows:
        created = min(created, now)
        released = None if length is None else min(created + timedelta(minutes=30 * length), now)
        hours = None if released is None else (released - created).total_seconds() / 3600
        held(node, created, hours, boards, project=projects[which], cpu_millicores=cpu,
             memory_mib=memory)  # fmt: skip
        intervals.append((created, released, boards, cpu, memory, projects[which].pk))
    start, end = min(period), max(period)

    found = usage_in(start, end, by="project", unit=unit, now=now)

    assert {
        (u.bucket, u.key): (u.board_hours, u.cpu_hours, u.memory_gib_hours) for u in found
    } == reference(intervals, start, end, now, unit)
    # Buckets in time order; in each, most board-hours first, then CPU (ties: by id).
    assert found == sorted(found, key=lambda u: (u.bucket or T0, -u.board_hours, -u.cpu_hours,
                                                 u.key is None, u.key or 0))  # fmt: skip


@pytest.mark.django_db
def test_usage_by_member_and_pool_only_of_the_projects_asked(alice, bob, vision, speech):
    pool = ResourcePoolFactory(name="reserved")
    node = NodeFactory()
    day = T0 + timedelta(hours=2)
    for owner, project, where, boards in [
        (alice, vision, pool, "2"), (bob, vision, None, "1"), (bob, speech, None, "4"),
    ]:  # fmt: skip
        held(node, day, 3, boards, owner=owner, project=project, pool=where)
    window = (day, day + timedelta(days=1))

    by_member = usage_in(*window, by="owner", projects=[vision.pk])
    by_pool = usage_in(*window, by="pool")

    assert [(u.key, u.board_hours) for u in by_member] == [(alice.pk, 6), (bob.pk, 3)]
    assert [(u.key, u.board_hours) for u in by_pool] == [(None, 15), (pool.pk, 6)]


@pytest.mark.django_db
def test_usage_refuses_what_it_cannot_group_by(vision):
    with pytest.raises(ValueError, match="grouped by one of project, owner, pool"):
        usage_in(T0, T0 + timedelta(days=1), by="name; DROP TABLE x")
    with pytest.raises(ValueError, match="bucketed by one of day, week, month"):
        usage_in(T0, T0 + timedelta(days=1), unit="year")
    assert usage_in(T0, T0) == []
