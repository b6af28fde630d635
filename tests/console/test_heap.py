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
