from decimal import Decimal

import pytest

from resources import hooks
from resources.models import Node
from resources.placement import availability
from tests.resources.factories import (
    AcceleratorModelFactory,
    AllocationFactory,
    NodeFactory,
    NodeSpecFactory,
    ResourcePoolFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def a100():
    return AcceleratorModelFactory(name="A100")


@pytest.fixture
def cluster(a100, vision):
    """Two 8-board nodes (one with 6 boards busy), a cordoned one, a vision-only one."""
    free = NodeFactory(name="gpu-free", gpus=True, accelerator_model=a100)
    busy = NodeFactory(name="gpu-busy", gpus=True, accelerator_model=a100)
    AllocationFactory(node=busy, label="train-a", slots=[0, 1, 2, 3], cpu_millicores=8000)
    AllocationFactory(node=busy, label="train-b", slots=[4, 5], cpu_millicores=4000)
    NodeFactory(name="gpu-cordoned", gpus=True, accelerator_model=a100, cordoned=True)
    NodeFactory(name="gpu-down", gpus=True, accelerator_model=a100, status=Node.Status.NOT_READY)
    pool = ResourcePoolFactory(name="vision-only")
    pool.projects.add(vision)
    NodeFactory(name="gpu-vision", gpus=True, accelerator_model=a100, pool=pool)
    return {"free": free, "busy": busy}


@pytest.fixture
def spec4(a100):
    return NodeSpecFactory(name="a100x4", boards=Decimal(4), accelerator_model=a100)


def rows_by_name(result):
    availability.describe_rows(result.rows, result.chosen)
    return {row.node.name: row for row in result.rows}


def test_idle_and_tight_with_reasons(cluster, spec4, alice, vision):
    result = availability.compute(alice, vision, spec_ids=[spec4.pk])
    rows = rows_by_name(result)
    assert set(rows) == {"gpu-free", "gpu-busy", "gpu-vision"}  # not cordoned, not down
    assert rows["gpu-free"].status == availability.IDLE
    busy = rows["gpu-busy"]
    assert busy.status == availability.TIGHT
    assert busy.short == ["a100x4: A100: needs 4, 2 free"]
    assert busy.usage == [
        "0(0):train-a", "1(0):train-a", "2(0):train-a", "3(0):train-a",
        "4(0):train-b", "5(0):train-b",
    ]  # fmt: skip
    assert (busy.state.cpu_used, busy.state.boards_in_use()) == (12000, 6)
    assert result.rows[0].status == availability.IDLE  # idle first


def test_fits_now_counts_fragmentation_per_place(cluster, spec4, alice, vision):
    (summary,) = availability.compute(alice, vision, spec_ids=[spec4.pk]).summaries
    # gpu-free and gpu-vision hold two 4-board replicas each; gpu-busy none (2 boards free).
    # A job runs on the shared nodes or in one pool, never across both: no gang of 4.
    shared, pool = summary.answers
    assert (shared.where.pool, shared.nodes, shared.now) == (None, 1, 2)
    assert (pool.pool.name, pool.nodes, pool.now) == ("vision-only", 1, 2)
    assert summary.largest_job == 2


def test_answers_only_in_places_the_project_may_use(cluster, spec4, charlie, speech, admin):
    (summary,) = availability.compute(charlie, speech, spec_ids=[spec4.pk]).summaries
    assert [answer.where.pool for answer in summary.answers] == [None]
    # Admins see every pool's nodes, but their jobs (no project) run on shared nodes only.
    result = availability.compute(admin, None, spec_ids=[spec4.pk])
    assert "gpu-vision" in {row.state.name for row in result.rows}
    assert [answer.where.pool for answer in result.summaries[0].answers] == [None]


def test_outsiders_never_see_a_pool_they_may_not_use(cluster, spec4, charlie, speech):
    rows = rows_by_name(availability.compute(charlie, speech, spec_ids=[spec4.pk]))
    assert "gpu-vision" not in rows
    assert set(rows) == {"gpu-free", "gpu-busy"}


def test_admin_sees_every_pool(cluster, spec4, admin):
    assert "gpu-vision" in rows_by_name(availability.compute(admin, None))


def test_model_filter_limits_specs_and_nodes(cluster, spec4, alice, vision):
    other = AcceleratorModelFactory(name="MLU370", kind="MLU")
    NodeFactory(name="mlu-1", board_count=4, accelerator_model=other)
    NodeSpecFactory(name="mlu-spec", boards=Decimal(1), accelerator_model=other)
    result = availability.compute(alice, vision, model_ids=[other.pk])
    assert [spec.name for spec in result.specs] == ["mlu-spec"]
    assert [row.state.name for row in result.rows] == ["mlu-1"]


def test_specs_that_fit_each_node(cluster, spec4, a100, alice, vision):
    small = NodeSpecFactory(name="cpu-only", cpu_millicores=1000, memory_mib=1024)
    rows = rows_by_name(availability.compute(alice, vision))
    assert rows["gpu-free"].fitting == [spec4, small] or set(rows["gpu-free"].fitting) == {
        spec4, small,
    }  # fmt: skip
    assert rows["gpu-busy"].fitting == [small]


def test_queued_demand_comes_from_the_providers(cluster, a100, alice, vision):
    hooks.demand_providers.append(lambda: {a100.pk: 12})
    try:
        assert availability.compute(alice, vision).demand == {a100.pk: 12}
    finally:
        hooks.demand_providers.pop()
