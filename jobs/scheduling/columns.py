"""A timeline as the stored plan carries it: its segments and items as columns of numbers.

The plan a pass publishes (jobs.admission.plans) holds a timeline per node and tens of
thousands of items; pickled one tuple at a time they were half of publishing it. An
``array`` pickles as one block of bytes, so each field of the items travels as one.
"""

from __future__ import annotations

from array import array


def to_columns(timeline) -> tuple:
    """A timeline's segments and items as arrays (items keyed otherwise than (job id,
    replica), or a mask wider than 64 slots, as they are)."""
    items = timeline.items
    segments = (array("d", timeline.times), array("q", timeline.cpu), array("q", timeline.mem))
    try:
        keys, values = list(items), list(items.values())
        packed = (
            array("q", [job for job, _ in keys]),
            array("q", [replica for _, replica in keys]),
            # An item's start, end, cpu, memory, mask and owner.
            *(array(code, [value[k] for value in values]) for k, code in enumerate("ddqqQq")),
        )
        return (*segments, array("Q", timeline.mask), packed)
    except (TypeError, ValueError, OverflowError):
        return (*segments, list(timeline.mask), {key: tuple(item) for key, item in items.items()})


def from_columns(columns: tuple, item_type: type) -> tuple:
    """(times, cpu, mem, mask, items) as a timeline holds them, from :func:`to_columns`."""
    times, cpu, mem, mask, packed = columns
    make = tuple.__new__  # item_type(*values) without its Python-level constructor
    if isinstance(packed, dict):
        items = {key: make(item_type, values) for key, values in packed.items()}
    else:
        jobs, replicas, *fields = packed
        keys, rows = zip(jobs, replicas, strict=True), zip(*fields, strict=True)
        items = {key: make(item_type, values) for key, values in zip(keys, rows, strict=True)}
    return times.tolist(), cpu.tolist(), mem.tolist(), list(mask), items
