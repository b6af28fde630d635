"""A web process's start-up objects, kept out of the garbage collector's full passes.

Everything a process makes at start (Django's apps and models, the URL configuration and
every view module it imports, the translations) lives as long as the process. CPython's
full collection walks all of it all the same, and a page that makes many objects set one
off every other request: /cluster/ with 1,000 nodes took about 100 ms longer on those
(p95 317 ms against a p50 of 221 ms). Frozen, those objects are no longer walked.
"""

from __future__ import annotations

import gc
from collections.abc import Callable


def freeze_start_up() -> None:
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - the views and all they import, loaded now
    gc.collect()
    gc.freeze()


def made_frozen[T](make: Callable[[], T]) -> T:
    """``make()`` a large structure that lives long and holds no cycles (the form's plan
    of a 10,000-job queue: about a million objects), kept out of the collector's passes.

    ``make`` pauses the collector itself (jobs.scheduling.passes.without_gc). Once made,
    each object would still be walked by the young generations' passes and then by the
    older ones' (about 0.3 s each at that size, paid by whichever requests come next);
    frozen, never. Freezing keeps whatever is tracked then, so first everything frozen
    before is let go and the whole heap collected (cycles left since the last time are
    freed, nothing frozen piles up), with the old structure already dropped by the caller.
    Objects of it are still freed by reference counting when it goes.
    """
    gc.unfreeze()
    gc.collect()
    made = make()
    gc.freeze()
    return made


def made_frozen_beside[T](make: Callable[[], T]) -> T:
    """:func:`made_frozen` for a thread that makes the next structure while requests still
    use the old one: without its full collection, which walks the old structure too and
    holds the interpreter for a fifth of a second. Only the young generations are collected
    first (they hold little then); the new structure is frozen as soon as it is made. A
    cycle dropped in the oldest generation since the last full collection is frozen with
    it, kept until the next :func:`made_frozen` (the old structure itself is freed by
    reference counting when it goes)."""
    gc.collect(1)
    made = make()
    gc.freeze()
    return made
