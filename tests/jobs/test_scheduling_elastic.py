"""Room for a running elastic job to grow (SPEC F5): the admission model asked how many
nodes it would get now if it were requeued, its own nodes given back."""

from __future__ import annotations

from jobs.scheduling.data import URGENT
from jobs.scheduling.predict import room_to_grow
from tests.jobs.test_scheduling_core import boards, job, node, running, spec

NODES = [node(1), node(2), node(3), node(4)]
ME = 10


def me(**fields):
    """Job 10 asking 4 whole nodes, at least 1, as requeued: resubmitted."""
    fields.setdefault("resubmitted", True)
    return job(ME, spec(1, boards(8), nodes=4, min_nodes=1), duration=100.0, **fields)


# It runs on node 1; job 100 holds nodes 2 and 3 until 500; node 4 is free.
BUSY = [running(ME, 200.0, (1, 0, 8)), running(100, 500.0, (2, 0, 8), (3, 0, 8))]


def test_its_own_node_and_the_free_one():
    assert room_to_grow(NODES, BUSY, [], me(), 10.0) == 2


def test_no_free_node_means_no_more_than_it_has():
    busy = [*BUSY, running(101, 500.0, (4, 0, 8))]
    assert room_to_grow(NODES, busy, [], me(), 10.0) == 1


def test_all_nodes_it_asked_for_once_everything_ended():
    assert room_to_grow(NODES, BUSY[:1], [], me(), 10.0) == 4


def test_a_job_ahead_that_fits_the_free_room_gets_it_first():
    urgent = job(1, spec(1, boards(8)), priority=URGENT)
    assert room_to_grow(NODES, BUSY, [urgent], me(), 10.0) == 1


def test_a_job_behind_it_does_not_count():
    later = job(20, spec(1, boards(8)), submitted_at=50.0)
    assert room_to_grow(NODES, BUSY, [later], me(submitted_at=5.0), 10.0) == 2


def test_a_job_ahead_that_its_given_back_node_would_start_takes_it():
    # Two whole nodes: node 4 alone is too few, node 4 and its own node 1 are enough.
    urgent = job(1, spec(1, boards(8), nodes=2), priority=URGENT)
    assert room_to_grow(NODES, BUSY, [urgent], me(), 10.0) == 0


def test_room_a_job_ahead_is_promised_later_is_not_taken():
    # Job 1 (ahead) needs three nodes: it is promised nodes 1, 2, 3 or 4 once job 100 ends at
    # 500. Growing on node 4 for 100 s from now would not delay it; a 1,000 s run would.
    ahead = job(1, spec(1, boards(8), nodes=3), priority=URGENT, duration=100.0)
    short = job(ME, spec(1, boards(8), nodes=4, min_nodes=1), duration=100.0, resubmitted=True)
    long = job(ME, spec(1, boards(8), nodes=4, min_nodes=1), duration=1000.0, resubmitted=True)
    assert room_to_grow(NODES, BUSY, [ahead], short, 10.0) == 2
    assert room_to_grow(NODES, BUSY, [ahead], long, 10.0) == 1
