"""`make run`'s children: one that dies is started again, one that keeps dying ends it."""

import sys

from console.supervisor import RESTARTS_PER_MINUTE, Children
from tests.helpers import wait_until


def test_a_child_that_dies_is_started_again_until_it_keeps_dying():
    children = Children()
    children.start("worker", [sys.executable, "-c", "raise SystemExit(1)"])
    try:
        for _ in range(RESTARTS_PER_MINUTE):
            assert wait_until(children.exited, 20) == ("worker", 1)
            assert children.restart("worker")
        assert wait_until(children.exited, 20) == ("worker", 1)
        assert not children.restart("worker"), "a child dying again and again is not restarted"
    finally:
        children.stop()


def test_a_running_child_is_not_reported_gone():
    children = Children()
    children.start("beat", [sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert children.exited() is None
    finally:
        children.stop()
    assert children.exited() == ("beat", -15)
