"""The time-resource profile: its arithmetic agrees with resources.placement.capacity, and the
earliest-start search finds exactly the first start a brute force finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.scheduling.node_fit import NodeInfo, fit, from_mask, to_mask
from jobs.scheduling.profile import Profile
from jobs.scheduling.search import earliest, tail_fit
from jobs.scheduling.timeline import Item, Timeline
from resources.placement.capacity import Demand, NodeState, fit_count

MODELS = (1, 2)

demands = st.builds(
    Demand,
    cpu=st.integers(0, 20_000),
    memory=st.integers(0, 100_000),
    boards=st.integers(0, 4),
    slice_divisor=st.just(1),
    model=st.sampled_from((None, *MODELS)),
) | st.builds(
    Demand,
    cpu=st.integers(0, 20_000),
    memory=st.integers(0, 100_000),
    boards=st.just(0),
    slice_divisor=st.sampled_from((2, 4)),
    model=st.sampled_from(MODELS),
)


@st.composite
def states(draw) -> NodeState:
    boards = draw(st.integers(0, 8))
    slices = draw(st.sampled_from((1, 2, 4)))
    cpu_total, memory_total = draw(st.integers(0, 64_000)), draw(st.integers(0, 300_000))
    return NodeState(
        id=1,
        name="n1",
        cpu_total=cpu_total,
        memory_total=memory_total,
        boards=boards,
        slices=slices,
        model=draw(st.sampled_from((None, *MODELS))),
        cpu_used=draw(st.integers(0, cpu_total)),
        memory_used=draw(st.integers(0, memory_total)),
        used_slots=set(draw(st.lists(st.integers(0, max(boards * slices - 1, 0)), max_size=12)))
        if boards
        else set(),
    )


@given(states(), demands)
def test_fit_is_capacity_fit_count(state, demand):
    info = NodeInfo(0, state, None, None)
    assert fit(demand, info, state.cpu_used, state.memory_used, to_mask(state.used_slots)) == (
        fit_count(demand, state)
    )


@given(st.sets(st.integers(0, 63)))
def test_masks_round_trip(slots):
    assert from_mask(to_mask(slots)) == slots


def plain(index: int, boards: int = 4) -> NodeInfo:
    state = NodeState(index + 1, f"n{index + 1}", 16_000, 64 * 1024, boards=boards, model=1)
    return NodeInfo(index, state, None, None)


def test_removing_what_was_added_leaves_no_trace():
    tl = Timeline(plain(0), 0.0)
    tl.add("a", Item(0.0, 10.0, 1000, 1024, 0b0011, 7))
    tl.add("b", Item(5.0, 20.0, 2000, 1024, 0b0100, 8))
    assert tl.times == [0.0, 5.0, 10.0, 20.0]
    assert tl.view(4.0, 2.0) == (3000, 2048, 0b0111)
    assert tl.ends == {10.0: [7], 20.0: [8]}
    tl.remove("a")
    tl.remove("b")
    assert (tl.times, tl.cpu, tl.mem, tl.mask) == ([0.0], [0], [0], [0])


def test_count_says_how_long_it_holds():
    tl = Timeline(plain(0), 0.0)
    tl.add("a", Item(0.0, 10.0, 0, 0, 0b0011, 7))  # boards 0-1 until 10
    tl.add("b", Item(30.0, 40.0, 0, 0, 0b1100, 8))  # boards 2-3 from 30
    two = Demand(0, 0, boards=2, model=1)
    # From 0 for 15: boards 2-3 fit until the window reaches b at 30 (starts after 15).
    assert tl.count(two, 15.0, 0.0) == (1, 10.0, 15.0)
    # From 0 for 50: the window unites both items, nothing fits; look again when a ends.
    assert tl.count(two, 50.0, 0.0) == (0, 10.0, float("inf"))
    assert tl.next_room(two, ("two",), 25.0, 0.0) == 0.0
    assert tl.next_room(Demand(0, 0, boards=3, model=1), ("three",), 5.0, 0.0) == 10.0


@st.composite
def profiles(draw):
    infos = []
    for i in range(draw(st.integers(1, 4))):
        state = NodeState(
            i + 1,
            f"n{i + 1}",
            draw(st.sampled_from((4000, 16_000))),
            64 * 1024,
            boards=draw(st.integers(0, 4)),
            slices=draw(st.sampled_from((1, 2))),
            model=draw(st.sampled_from(MODELS)),
        )
        infos.append(NodeInfo(i, state, None, None))
    profile = Profile(infos, 0.0)
    items = []
    for k in range(draw(st.integers(0, 12))):
        info = draw(st.sampled_from(infos))
        start = float(draw(st.integers(0, 30)))
        end = start + draw(st.integers(1, 30))
        slots = draw(st.sets(st.integers(0, max(info.slots_total - 1, 0)), max_size=3))
        mask = to_mask(slots) & info.all_slots
        item = Item(start, end, draw(st.sampled_from((0, 1000, 3000))), 1024, mask, k)
        profile.add(info.index, k, item)
        items.append((info.index, item))
    cpu, model = draw(st.sampled_from((500, 2000))), draw(st.sampled_from(MODELS))
    if draw(st.booleans()):
        demand = Demand(cpu, 1024, boards=draw(st.integers(0, 2)), model=model)
    else:
        demand = Demand(cpu, 1024, slice_divisor=2, model=model)
    return profile, infos, items, demand, float(draw(st.integers(1, 20))), draw(st.integers(1, 4))


def brute_count(info, items, demand, t, duration):
    """Replicas that fit from t for duration, from the items directly."""
    window = [i for n, i in items if n == info.index and i.start < t + duration and i.end > t]
    instants = [t] + [i.start for i in window if i.start > t]

    def usage(moment, field):
        return sum(getattr(i, field) for i in window if i.start <= moment < i.end)

    mask = 0
    for i in window:
        mask |= i.mask
    return fit(
        demand,
        info,
        max(usage(m, "cpu") for m in instants),
        max(usage(m, "mem") for m in instants),
        mask,
    )


@settings(max_examples=300, deadline=None)
@given(profiles())
def test_earliest_is_the_first_start_that_fits(case):
    profile, infos, items, demand, duration, need = case
    capable = [info.index for info in infos if fit(demand, info, 0, 0, 0)]
    if sum(fit(demand, infos[i], 0, 0, 0) for i in capable) < need:
        return
    candidates = sorted({0.0} | {item.end for _, item in items})
    expected = next(
        t
        for t in candidates
        if sum(brute_count(infos[i], items, demand, t, duration) for i in capable) >= need
    )
    found = earliest(profile, capable, demand, duration, need, group=("g",), enough=10**9)
    assert found is not None and found.start == expected
    for i in capable:
        assert found.counts.get(i, 0) == brute_count(infos[i], items, demand, expected, duration)
    # Asked for just enough, it may stop counting early: what it counts is still exact.
    quick = earliest(profile, capable, demand, duration, need)
    assert quick.start == expected and sum(quick.counts.values()) >= need
    assert all(found.counts.get(i, 0) == n for i, n in quick.counts.items())
    # The cache answers the same on a second search; a horizon before the answer finds none.
    assert earliest(profile, capable, demand, duration, need, group=("g",)).start == expected
    if expected > 0:
        assert earliest(profile, capable, demand, duration, need, horizon=expected - 1) is None
    # Out of budget, the search appends where nodes fall idle: later maybe, never earlier.
    fallback = earliest(profile, capable, demand, duration, need, budget=0)
    assert fallback.start >= expected
    assert fallback == tail_fit(profile, capable, demand, need) or fallback.start == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 6), st.integers(0, 3)), max_size=25))
def test_adding_and_removing_keeps_segments_exact(operations):
    """Whatever is added and removed, every segment holds exactly the live items' usage,
    and the breakpoints are exactly their starts and ends."""
    tl = Timeline(plain(0, boards=8), 0.0)
    live: dict[int, Item] = {}
    for k, (start, length, slot) in enumerate(operations):
        if slot == 3 and live:  # remove the oldest live item
            key = min(live)
            tl.remove(key)
            del live[key]
            continue
        item = Item(float(start), float(start + length), 1000 * (k + 1), k + 1, 1 << slot, k)
        if any(
            i.mask & item.mask and i.start < item.end and item.start < i.end for i in live.values()
        ):
            item = item._replace(mask=0)  # items overlapping in time never share a slot
        tl.add(k, item)
        live[k] = item
        assert set(tl.times) == {0.0} | {i.start for i in live.values()} | {
            i.end for i in live.values()
        }
        for t, cpu, mem, mask in zip(tl.times, tl.cpu, tl.mem, tl.mask, strict=True):
            active = [i for i in live.values() if i.start <= t < i.end]
            assert cpu == sum(i.cpu for i in active) and mem == sum(i.mem for i in active)
            assert mask == to_mask(s for i in active for s in from_mask(i.mask))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(1, 6), st.integers(0, 2)), max_size=25),
    st.data(),
)
def test_removing_at_once_leaves_what_removing_one_by_one_does(placed, data):
    """A node's items lifted out together (warm.install after an urgent submit) leave the
    very segments, breakpoints and blockers that lifting them out one by one leaves, on a
    node with usage of its own too."""
    state = NodeState(1, "n1", 16_000, 64 * 1024, boards=8, model=1, cpu_used=500,
                      memory_used=64, used_slots={7})  # fmt: skip
    one, other = (Timeline(NodeInfo(0, state, None, None), 0.0) for _ in range(2))
    live: dict[int, Item] = {}
    for k, (start, length, slot) in enumerate(placed):
        item = Item(float(start), float(start + length), 100 * (k + 1), k + 1, 1 << slot, k)
        if any(i.mask & item.mask and i.start < item.end and item.start < i.end
               for i in live.values()):  # fmt: skip
            item = item._replace(mask=0)
        for tl in (one, other):
            tl.add(k, item)
        live[k] = item
    gone = data.draw(st.lists(st.sampled_from(sorted(live)), unique=True) if live else st.just([]))
    for key in gone:
        one.remove(key)
    assert other.remove_all(gone) == [live[key] for key in gone]
    assert (other.times, other.cpu, other.mem, other.mask) == (one.times, one.cpu, one.mem,
                                                               one.mask)  # fmt: skip
    assert other.items == one.items and other.bounds == one.bounds
    assert {t: o for t, o in other.ends.items() if o} == {t: o for t, o in one.ends.items() if o}
