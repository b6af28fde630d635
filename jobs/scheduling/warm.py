"""A pass that starts from the profile the last pass left, changed where the state did.

Between two passes of a worker little changes: a few jobs end or are admitted, a few are
submitted. Made from nothing, every pass booked every running job and every kept
reservation again, node by node (a long queue's hundred thousand replicas, most of a pass
that searches nothing). Carried over, the last pass's profile is brought to this pass's
moment (:func:`carried`: what ended by then goes, what began before it begins then) and
then to exactly what this pass would have booked (:func:`install`): on each node the items
that are not wanted any more are lifted out and the missing ones booked, each checked to
fit. Where one would not fit the pass books from nothing after all, as it always did (the
first reservation that does not fit ends the kept ones, which only the one-by-one booking
finds).

Either way the profile then holds the same items with the same segments, and what searches
learnt is forgotten (:func:`forget_answers`, in both), so the plan is the same: the
property tests run every pass both ways (``tests/jobs/test_scheduling_warm.py`` and the
simulation of ``test_scheduling_property.py``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from jobs.scheduling.booking import Booking, booked_items
from jobs.scheduling.data import QueuedJob
from jobs.scheduling.node_fit import NodeInfo
from jobs.scheduling.profile import Profile
from jobs.scheduling.settled import Digest
from jobs.scheduling.shapes import Shapes
from jobs.scheduling.timeline import Item, Timeline

EMPTY: frozenset[int] = frozenset()


def carried(profile: Profile | None, infos: Sequence[NodeInfo], now: float) -> Profile | None:
    """``profile`` (another pass's, no longer used there) made the start of a pass at
    ``now`` over these nodes: None where it cannot be (other nodes, or a later moment)."""
    if profile is None or profile.origin > now or len(profile.timelines) != len(infos):
        return None
    if not all(_same(tl.info, info) for tl, info in zip(profile.timelines, infos, strict=True)):
        return None
    for tl, info in zip(profile.timelines, infos, strict=True):
        tl.info = info
        if now > tl.times[0]:
            _advance(tl, now)
    profile.origin = now  # what searches learnt went at hand-over (Schedule.hand_over)
    return profile


def left_with(profile: Profile | None, digest: Digest | None) -> bool:
    """Whether ``profile``, not yet carried, is the one the pass that left ``digest`` ended
    with: it holds every item the digest noted and no other (a worker keeps both from its
    last pass, and the digest's items are the profile's own objects, so this costs a
    reference comparison an item). A kept reservation that digest held settled and that is
    still to start is then in it as it is (see :func:`install`)."""
    if profile is None or digest is None:
        return False
    items = digest.items
    return (
        digest.now == profile.origin
        and len(items) == len(profile.timelines)
        and all(items.get(tl.info.id) == tl.items for tl in profile.timelines)
    )


def _same(old: NodeInfo, new: NodeInfo) -> bool:
    return all(getattr(old, name) == getattr(new, name) for name in NodeInfo.__slots__)


def _advance(tl: Timeline, now: float) -> None:
    """The timeline from ``now`` on, as a pass at ``now`` books it: items ended by then
    gone, those begun before it beginning then, no segment before it."""
    tl.room.clear()  # empty after a hand-over; else removals would keep runs up to date
    for key in [key for key, item in tl.items.items() if item.end <= now]:
        tl.remove(key)
    bounds, items = tl.bounds, tl.items
    for key, item in [(key, item) for key, item in items.items() if item.start < now]:
        items[key] = item._replace(start=now)
        left = bounds[item.start] - 1
        if left:
            bounds[item.start] = left
        else:
            del bounds[item.start]
        bounds[now] = bounds.get(now, 0) + 1
    first = bisect_right(tl.times, now) - 1
    if first:
        del tl.times[:first], tl.cpu[:first], tl.mem[:first], tl.mask[:first]
    tl.times[0] = now
    # Owners are taken out of these lists as their items go; the lists stay: drop the empty.
    for t in [t for t, owners in tl.ends.items() if not owners]:
        del tl.ends[t]


def install(
    profile: Profile,
    holding: list[tuple[int, tuple, Item]],
    held: list[tuple[QueuedJob, Booking]],
    in_place: AbstractSet[int] = EMPTY,
) -> bool:
    """Make every node hold exactly the running jobs' replicas (``holding``: node index,
    key, item) and the kept reservations ``held``, as a pass booking them afresh would:
    False (the profile then half changed, of no further use) where one does not fit beside
    the others. ``in_place``: jobs of ``held`` whose items the profile holds as they are
    (see ``rebook.recommit_all``): a long queue's items are not made again to be compared."""
    wanted: dict[int, dict[object, Item]] = {}
    for index, key, item in holding:
        wanted.setdefault(index, {})[key] = item
    for job, booking in held:
        if job.id not in in_place:
            for index, key, item in booked_items(job, booking):
                wanted.setdefault(index, {})[key] = item
    empty: dict[object, Item] = {}
    for index, tl in enumerate(profile.timelines):
        want = wanted.get(index, empty)
        have = tl.items
        if have == want:
            continue
        gone = [key for key, item in have.items()
                if key[0] not in in_place and want.get(key) != item]  # fmt: skip
        if gone:
            profile.remove_all(index, gone)
        info = tl.info
        for key, item in want.items():
            if key in have:
                continue
            cpu, mem, used = tl.view(item.start, item.end - item.start)
            if (
                cpu + item.cpu > info.cpu_total
                or mem + item.mem > info.mem_total
                or used & item.mask
            ):
                return False
            profile.add(index, key, item)
    return True


def forget_answers(profile: Profile) -> None:
    """Drop what searches learnt of the profile (shapes, runs of room, groups): a pass's
    searches then start from the same knowledge whether the profile was carried over or
    made afresh, and so take the same steps."""
    shapes = profile.shapes = Shapes()
    for tl in profile.timelines:
        tl.shapes, tl.shape = shapes, None
        tl.room.clear()
    profile.groups = {}
    profile.changes = []
