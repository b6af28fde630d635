"""What happens after a change to the queue: the scheduler plugs in here."""

from __future__ import annotations

from collections.abc import Callable

queue_listeners: list[Callable[[], None]] = []
# (ids of the jobs a pass admitted) -> None: the execution layer starts them
admission_listeners: list[Callable[[list[int]], None]] = []
# (job id, sub-task) -> None: the execution layer starts a batch job's next sub-task once the
# one before it has ended well (registered, not imported: starting a run ends one on failure)
subtask_starters: list[Callable[[int, object], object]] = []


def queue_changed() -> None:
    """Called on commit after a job is submitted, stopped, finished or re-prioritised."""
    for listener in queue_listeners:
        listener()
