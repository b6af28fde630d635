"""The web process freezes what it made at start (console/heap.py says why): its URL
configuration is loaded and the collector no longer walks those objects."""

import subprocess
import sys

import pytest

PROBE = """
import gc, sys
import {module}
from django.urls import get_resolver
print(gc.get_freeze_count(), "console.urls" in sys.modules, "jobs.views.queue" in sys.modules)
"""


@pytest.mark.parametrize("module", ["console.asgi", "console.wsgi"])
def test_the_entry_points_freeze_the_start_up_objects(module):
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    frozen, urls, views = done.stdout.split()
    assert int(frozen) > 10_000, done.stdout
    assert urls == views == "True"


class Node:
    def __init__(self):
        self.me = self  # a cycle: only the collector frees it


def test_what_is_made_frozen_stays_out_and_nothing_piles_up():
    import gc
    import weakref

    from console.heap import made_frozen
    from jobs.scheduling.passes import without_gc

    @without_gc  # as the form's plan is made (jobs.admission.prediction)
    def make():
        assert not gc.isenabled()  # made without the collector's passes
        return [(k, str(k)) for k in range(50_000)]

    gc.enable()
    try:
        left = Node()
        gone = weakref.ref(left)
        del left
        made = made_frozen(make)
        assert gone() is None  # cycles left before are freed, not frozen for good
        assert gc.isenabled()
        frozen = gc.get_freeze_count()
        assert frozen >= 50_000
        gc.collect()
        # Kept out of full collections: not among the objects the collector walks. (The
        # frozen count itself may drop meanwhile: frozen objects freed elsewhere leave it.)
        assert all(obj is not made for obj in gc.get_objects())
        del made
        again = made_frozen(make)
        # The first structure went with its last reference: frozen objects do not pile up.
        assert gc.get_freeze_count() < frozen + 50_000
        del again
    finally:
        gc.unfreeze()
