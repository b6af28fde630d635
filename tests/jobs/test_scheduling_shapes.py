"""The search's shortcuts answer as the plain computations would: answers shared by
timelines of one shape, the groups' sorted first rooms, and slots chosen on bitmasks."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from math import inf

from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.scheduling import search
from jobs.scheduling import timeline as timeline_module
from jobs.scheduling.groups import SOLO, Group
from jobs.scheduling.node_fit import NodeInfo, choose, fit, to_mask
from jobs.scheduling.nodes import first_rooms
from jobs.scheduling.profile import Profile, demand_key
from jobs.scheduling.rules import shortfall, shortfall_now
from jobs.scheduling.search import earliest
from jobs.scheduling.timeline import Item, Timeline
from resources.placement.capacity import Demand, NodeState, choose_slots, shortages
from tests.jobs.test_scheduling_profile import demands, states

MODEL = 1
# Timelines longer than SHARED_UP_TO segments take a shape of their own: drawn small, so
# that both kinds of shape meet in the tests' short timelines.
limits = st.sampled_from((2, 6, timeline_module.SHARED_UP_TO))


@contextmanager
def shared_up_to(limit: int):
    saved, timeline_module.SHARED_UP_TO = timeline_module.SHARED_UP_TO, limit
    try:
        yield
    finally:
        timeline_module.SHARED_UP_TO = saved


@given(states(), demands)
def test_choose_is_capacity_choose_slots(state, demand):
    info = NodeInfo(0, state, None, None)
    mask = to_mask(state.used_slots)
    if fit(demand, info, state.cpu_used, state.memory_used, mask):
        assert list(choose(demand, info, mask)) == choose_slots(demand, state)


def node(index: int, boards: int, slices: int) -> NodeInfo:
    state = NodeState(index + 1, f"n{index + 1}", 16_000, 64 * 1024, boards, slices, MODEL)
    return NodeInfo(index, state, None, None)


operations = st.lists(
    st.tuples(
        st.integers(0, 3),  # node
        st.integers(0, 20),  # start
        st.integers(1, 15),  # length
        st.integers(0, 7),  # slot, or remove the node's oldest item when 7
        st.sampled_from((0, 2000, 6000)),  # cpu
    ),
    max_size=30,
)


def apply(profile: Profile, live: dict[int, dict[int, Item]], k: int, op) -> None:
    """One of ``operations`` on the profile (``live``: each node's items, kept beside it).
    A removal from a node holding nothing does nothing."""
    index, start, length, slot, cpu = op
    items = live[index]
    if slot == 7:
        if items:
            profile.remove(index, min(items))
            del items[min(items)]
        return
    item = Item(float(start), float(start + length), cpu, 1024, 1 << (slot % 4), k)
    if any(i.mask & item.mask and i.start < item.end and item.start < i.end
           for i in items.values()):  # fmt: skip
        item = item._replace(mask=0)  # items overlapping in time never share a slot
    profile.add(index, k, item)
    items[k] = item


questions = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.sampled_from(
            [
                Demand(1000, 1024, boards=1, model=MODEL),
                Demand(4000, 1024, boards=2, model=MODEL),
                Demand(1000, 1024, slice_divisor=2, model=MODEL),
                Demand(8000, 1024),
            ]
        ),
        st.integers(1, 20),  # duration
        st.integers(0, 40),  # from
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=200, deadline=None)
@given(limits, st.sampled_from((1, 2)), operations, questions)
def test_shared_answers_are_those_of_a_lone_timeline(limit, slices, ops, asked):
    """Four nodes of one kind share answers by shape; after any additions and removals each
    answers exactly as a timeline of its own holding the same items (no stale answer)."""
    with shared_up_to(limit):
        infos = [node(i, 2, slices) for i in range(4)]
        profile = Profile(infos, 0.0)
        live: dict[int, dict[int, Item]] = {i: {} for i in range(4)}
        for k, op in enumerate(ops):
            apply(profile, live, k, op)
            if op[3] == 7:  # asked after the next addition
                continue
            for index, demand, duration, t in asked:
                alone = Timeline(infos[index], 0.0)  # a cache of its own
                for key, held in live[index].items():
                    alone.add(key, held)
                shared, key = profile.timelines[index], demand_key(demand)
                assert shared.first_room(demand, key) == alone.first_room(demand, key)
                answer = shared.window(demand, key, float(duration), float(t))
                assert answer == alone.window(demand, key, float(duration), float(t))
                n, _, _ = alone.count(demand, float(duration), float(t))
                assert answer[0] == (n if alone.next_room(demand, key, duration, t) == t else 0)


KINDS = [
    Demand(1000, 1024, boards=1, model=MODEL),
    Demand(4000, 1024, boards=2, model=MODEL),
    Demand(1000, 1024, slice_divisor=2, model=MODEL),
    Demand(8000, 1024),
]


@settings(max_examples=300, deadline=None)
@given(limits, st.sampled_from((1, 2)), operations, st.lists(st.sampled_from(KINDS), min_size=1))
def test_kept_runs_of_room_are_worked_out_afresh_after_every_change(limit, slices, ops, asked):
    """A node keeps its runs of room per demand across additions and removals (only the
    span that changed is worked out again): after each change they are what the whole
    timeline gives."""
    with shared_up_to(limit):
        infos = [node(i, 2, slices) for i in range(4)]
        profile = Profile(infos, 0.0)
        live: dict[int, dict[int, Item]] = {i: {} for i in range(4)}
        for tl in profile.timelines:  # asked before any change: kept from the start
            for demand in asked:
                tl.first_room(demand, demand_key(demand))
        for k, op in enumerate(ops):
            apply(profile, live, k, op)
            index = op[0]
            tl = profile.timelines[index]
            for demand in asked:
                kept = tl.room[demand_key(demand)]
                assert (kept[1], kept[2]) == tl.runs(demand), (demand, tl.times)
                starts, ends = kept[1], kept[2]
                # Maximal: no two runs touch, and each is a real one.
                assert all(e < s for e, s in zip(ends, starts[1:], strict=False))
                assert all(s < e for s, e in zip(starts, ends, strict=True))


@settings(max_examples=200, deadline=None)
@given(limits, operations, st.lists(st.sampled_from(KINDS), min_size=1))
def test_shapes_no_timeline_has_are_forgotten_with_their_answers(limit, ops, asked):
    """The shared answers are kept for the shapes timelines have now, not for every shape
    a node passed through (a long queue passes each node through hundreds)."""
    with shared_up_to(limit):
        profile = Profile([node(i, 2, 1) for i in range(4)], 0.0)
        live: dict[int, dict[int, Item]] = {i: {} for i in range(4)}
        shapes = profile.shapes
        for k, op in enumerate(ops):
            apply(profile, live, k, op)
            for tl in profile.timelines:
                for demand in asked:
                    tl.window(demand, demand_key(demand), 5.0, float(k % 20))
            held = [tl.shape for tl in profile.timelines if tl.shape is not None]
            assert set(shapes.keys) == set(shapes.users) == set(held)
            looked_up = {shape for shape, key in shapes.keys.items() if key is not None}
            assert set(shapes.ids.values()) == looked_up
            assert sum(shapes.users.values()) == len(held)
            assert set(shapes.windows) <= set(held) and set(shapes.runs) <= set(held)


@settings(max_examples=150, deadline=None)
@given(operations, st.lists(st.tuples(st.integers(1, 20), st.integers(1, 6)), max_size=6))
def test_cached_searches_between_bookings_match_fresh_ones(ops, searches):
    """A group's cached first rooms, kept across bookings and removals, find what a search
    without the cache finds: the same start and the same counts."""
    infos = [node(i, 4, 1) for i in range(4)]
    profile = Profile(infos, 0.0)
    demand = Demand(1000, 1024, boards=1, model=MODEL)
    live: dict[int, dict[int, Item]] = {i: {} for i in range(4)}
    steps = iter(searches)
    for k, op in enumerate(ops):
        apply(profile, live, k, op)
        step = next(steps, None)
        if step is not None:
            duration, need = float(step[0]), step[1]
            cached = earliest(profile, [0, 1, 2, 3], demand, duration, need, group="g", enough=99)
            fresh = earliest(profile, [0, 1, 2, 3], demand, duration, need, enough=99)
            assert cached == fresh


def mixed(index: int) -> NodeInfo:
    """Nodes of two kinds, so that groups hold several shapes from the start."""
    return node(index, 4 if index % 3 else 2, 1)


@settings(max_examples=300, deadline=None)
@given(
    limits,
    st.lists(
        st.tuples(
            st.integers(0, 7),  # node
            st.integers(0, 20),  # start
            st.integers(1, 15),  # length
            st.integers(0, 4),  # slot; 4: remove the node's oldest item
            st.sampled_from((0, 2000, 6000)),  # cpu
        ),
        max_size=40,
    ),
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    Demand(1000, 1024, boards=1, model=MODEL),
                    Demand(4000, 1024, boards=2, model=MODEL),
                    Demand(8000, 1024),
                ]
            ),
            st.integers(1, 20),  # duration
            st.integers(1, 12),  # need
            st.integers(0, 16),  # enough
            st.sampled_from((inf, 5.0, 20.0)),  # horizon
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_grouped_search_is_the_per_node_search(limit, ops, searches):
    """A group searching by shape (nodes of one shape asked once), one searching node by
    node (.nodes), and an uncached search find the same start and the same counts, across
    bookings and removals between searches (the groups follow them lazily)."""
    with shared_up_to(limit):
        infos = [mixed(i) for i in range(8)]
        profile = Profile(infos, 0.0)
        nodes = list(range(8))
        live: dict[int, dict[int, Item]] = {i: {} for i in nodes}
        steps = iter(searches * 5)
        for k, (index, start, length, slot, cpu) in enumerate(ops):
            items = live[index]
            if slot == 4 and items:
                profile.remove(index, min(items))
                del items[min(items)]
            elif slot != 4:
                mask = (1 << slot) & infos[index].all_slots
                item = Item(float(start), float(start + length), cpu, 1024, mask, k)
                if any(
                    i.mask & item.mask and i.start < item.end and item.start < i.end
                    for i in items.values()
                ):
                    item = item._replace(mask=0)
                profile.add(index, k, item)
                items[k] = item
            step = next(steps, None)
            if step is None:
                continue
            demand, duration, need, enough, horizon = step
            key = demand_key(demand)
            if ("nodes", demand) not in profile.groups:
                profile.groups["nodes", demand] = first_rooms(profile, nodes, demand, key)
            args = (profile, nodes, demand, float(duration), need, horizon)
            search.SOLO = inf  # never node by node
            try:
                by_shape = earliest(*args, group=("shapes", demand), enough=enough)
            finally:
                search.SOLO = SOLO
            by_node = earliest(*args, group=("nodes", demand), enough=enough)
            # A group going node by node halfway (Group.first_rooms) carries on alike.
            later = profile.groups.get(("later", demand))
            if later is None:
                profile.groups["later", demand] = Group(profile, nodes, demand, key)
            elif isinstance(later, Group) and k % 2:
                later.update(profile)
                profile.groups["later", demand] = later.first_rooms()
            assert earliest(*args, group=("later", demand), enough=enough) == by_node
            fresh = earliest(*args, enough=enough)
            assert by_shape == by_node  # the same start, the same nodes counted
            # Uncached, the same start; the same counts but where the origin's count stopped
            # early (which nodes it counted first depends on what the group has seen).
            assert (fresh is None) == (by_shape is None)
            if fresh is not None:
                assert fresh.start == by_shape.start
                if fresh.start > 0.0:
                    assert fresh == by_shape
            _check_group(profile, profile.groups["shapes", demand])


def _check_group(profile: Profile, group: Group) -> None:
    """What a group keeps is what its nodes say now: shapes, first rooms (or bounds of
    them), the sorted order, and every node with room at the origin among ``roomy``."""
    roomy = {index for nodes in group.roomy.values() for index in nodes}
    for shape, nodes in group.members.items():
        assert nodes == sorted(nodes)
        tl = profile.timelines[nodes[0]]
        first = tl.first_room(group.demand, group.key)
        for index in nodes:
            assert profile.timelines[index].first_room(group.demand, group.key) == first
            assert profile.timelines[index].shape_id() == shape
            if first == profile.origin:
                assert index in roomy
        if shape in group.unsure:
            assert group.firsts[shape] <= first
        else:
            assert group.firsts[shape] == first
    expected = sorted((f, 0, s, -1) for s, f in group.firsts.items() if f < inf)
    assert group.order == expected


@given(st.lists(states(), min_size=1, max_size=6), demands)
def test_shortfall_now_is_shortfall_on_states(nodes, demand):
    states_ = [replace(state, id=k + 1, name=f"n{k + 1}") for k, state in enumerate(nodes)]
    timelines = []
    for k, state in enumerate(states_):
        info = NodeInfo(k, replace(state, cpu_used=0, memory_used=0, used_slots=set()), None, None)
        tl = Timeline(info, 0.0)
        used = to_mask(state.used_slots)
        tl.add("now", Item(0.0, 1.0, state.cpu_used, state.memory_used, used, 1))
        timelines.append(tl)
    if any(fit(demand, tl.info, tl.cpu[0], tl.mem[0], tl.mask[0]) for tl in timelines):
        return  # asked only when nothing fits now
    if any(not shortages(demand, state) for state in states_):
        return  # a zero demand on a node with nothing free: fits none, short of nothing
    assert shortfall_now(demand, timelines) == shortfall(demand, states_)
