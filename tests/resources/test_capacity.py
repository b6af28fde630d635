from hypothesis import given
from hypothesis import strategies as st

from resources.placement.capacity import (
    Demand,
    NodeState,
    choose_slots,
    fit_count,
    fits,
    shortages,
    slot_label,
    take,
)

A100 = 1
V100 = 2


def node(**kwargs) -> NodeState:
    values = {"id": 1, "name": "n", "cpu_total": 64000, "memory_total": 512 * 1024}
    values.update(kwargs)
    return NodeState(**values)


class TestShortages:
    def test_cpu_only_demand_fits_a_cpu_node(self):
        assert fits(Demand(cpu=1000, memory=1024), node())

    def test_each_short_resource_is_named(self):
        n = node(cpu_total=4000, memory_total=2048, boards=4, model=A100, used_slots={0, 1, 2})
        short = shortages(Demand(cpu=8000, memory=4096, boards=2, model=A100), n)
        assert [(s.resource, s.need, s.free) for s in short] == [
            ("cpu", 8000, 4000),
            ("memory", 4096, 2048),
            ("boards", 2, 1),
        ]

    def test_wrong_model(self):
        short = shortages(Demand(1000, 1024, boards=1, model=V100), node(boards=8, model=A100))
        assert [s.resource for s in short] == ["model"]

    def test_slice_needs_a_node_sliced_the_same_way(self):
        half = Demand(1000, 1024, slice_divisor=2, model=A100)
        assert [s.resource for s in shortages(half, node(boards=2, model=A100))] == ["slices"]
        assert fits(half, node(boards=2, slices=2, model=A100))

    def test_whole_board_needs_every_slice_of_it_free(self):
        n = node(boards=2, slices=2, model=A100, used_slots={0, 3})
        assert shortages(Demand(1000, 1024, boards=1, model=A100), n)[0].free == 0


class TestPlacement:
    def test_whole_boards_take_the_lowest_free_boards(self):
        n = node(boards=8, model=A100, used_slots={0, 2})
        assert choose_slots(Demand(1000, 1024, boards=3, model=A100), n) == [1, 3, 4]

    def test_whole_board_on_sliced_node_takes_every_slice(self):
        n = node(boards=2, slices=4, model=A100, used_slots={1})
        assert choose_slots(Demand(1000, 1024, boards=1, model=A100), n) == [4, 5, 6, 7]

    def test_slices_fill_the_fullest_board_first(self):
        n = node(boards=3, slices=2, model=A100, used_slots={2})
        assert choose_slots(Demand(1000, 1024, slice_divisor=2, model=A100), n) == [3]

    def test_take_books_and_refuses_when_full(self):
        n = node(cpu_total=2000, boards=2, model=A100)
        demand = Demand(1000, 1024, boards=1, model=A100)
        assert take(demand, n) == [0]
        assert take(demand, n) == [1]
        assert take(demand, n) is None
        assert (n.cpu_used, n.used_slots) == (2000, {0, 1})

    def test_slot_label(self):
        assert slot_label(0, 1) == "0(0)"
        assert slot_label(5, 2) == "2(1)"


class TestFitCount:
    def test_fragmentation_counts(self):
        # 3 free boards cannot hold two 2-board replicas.
        n = node(boards=8, model=A100, used_slots={0, 1, 2, 3, 4})
        assert fit_count(Demand(1000, 1024, boards=2, model=A100), n) == 1

    def test_limited_by_memory(self):
        assert fit_count(Demand(1000, 200 * 1024), node()) == 2


demands = st.builds(
    Demand,
    cpu=st.integers(1, 20000),
    memory=st.integers(1, 100000),
    boards=st.integers(0, 4),
    slice_divisor=st.just(1),
    model=st.sampled_from((None, A100, V100)),
) | st.builds(
    Demand,
    cpu=st.integers(1, 20000),
    memory=st.integers(1, 100000),
    boards=st.just(0),
    slice_divisor=st.sampled_from((2, 4, 8)),
    model=st.sampled_from((A100, V100)),
)

nodes = st.builds(
    node,
    cpu_total=st.integers(0, 64000),
    memory_total=st.integers(0, 300000),
    boards=st.integers(0, 8),
    slices=st.sampled_from((1, 2, 4, 8)),
    model=st.sampled_from((None, A100, V100)),
)


@given(nodes, st.lists(demands, max_size=12))
def test_taking_never_overbooks(n, wanted):
    for demand in wanted:
        before = set(n.used_slots)
        slots = take(demand, n)
        if slots is not None:
            assert not before & set(slots), "a slot was booked twice"
    assert 0 <= n.cpu_used <= n.cpu_total
    assert 0 <= n.memory_used <= n.memory_total
    assert all(0 <= slot < n.slots_total for slot in n.used_slots)


@given(nodes, demands)
def test_fit_count_is_what_repeated_takes_achieve(n, demand):
    expected = fit_count(demand, n)
    assert fits(demand, n) == (expected > 0) == (choose_slots(demand, n) is not None)
    taken = 0
    while taken <= expected and take(demand, n) is not None:
        taken += 1
    assert taken == expected
