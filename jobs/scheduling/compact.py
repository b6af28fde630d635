"""Frozen slotted dataclasses pickled as a plain tuple of their fields.

The plan a pass publishes (jobs.admission.plans) holds tens of thousands of them (a
queued job, its alternatives). The dataclasses' own pickling works the fields out again
for every object, both ways: at 10,000 queued that was a fifth of the plan's unpickling
in each web process and a tenth of its pickling in the pass.
"""

from __future__ import annotations

from dataclasses import fields
from operator import attrgetter


def tuple_state(cls):
    """Give a frozen slotted dataclass a tuple for its pickled state (its fields in order)."""
    names = tuple(field.name for field in fields(cls))
    if len(names) > 1:
        read = attrgetter(*names)
    else:

        def read(self, name=names[0]):
            return (getattr(self, name),)

    assign = object.__setattr__  # the fields are frozen

    def __getstate__(self) -> tuple:
        return read(self)

    def __setstate__(self, state: tuple) -> None:
        for name, value in zip(names, state, strict=True):
            assign(self, name, value)

    cls.__getstate__, cls.__setstate__ = __getstate__, __setstate__
    return cls
