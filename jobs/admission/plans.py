"""The queue's plan, made once by the admission pass and shared with every web process.

The form's prediction answers from admission's own plan of the queue (SPEC J24, Q5). Making
that plan costs seconds on a long queue, so a web process must not make it on a request:
the admission pass, which makes it anyway, publishes it to the cache once its decisions are
written (:func:`offer`), with what it rests on (:class:`~jobs.admission.state.Seen`, its
own writes included); a web process whose plan is out of date takes the newest published
one (:func:`published_token`, then :func:`load`: one cache read and one unpickling), and
checks it like its own.
"""

from __future__ import annotations

import logging
import pickle
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.core.cache import cache

from jobs.admission.state import Seen, moment
from jobs.scheduling import core, passes

log = logging.getLogger(__name__)

# A plan is not used after this long: the change log it is checked against keeps 10 minutes.
MAX_AGE_SECONDS = 300.0
# While a running job is past its end (being stopped), a plan has it leave a minute after the
# plan's moment: so such a plan holds this long only.
OVERDUE_SECONDS = 30.0
# While a long queue is planned a part a pass (core.FRESH), each pass asks for the next at
# once. Publishing every part cost each pass a third of a second at 10,000 queued, and the
# web answers from the last plan meanwhile (dated), so a part is published only once the
# last plan is this old (or gone from the cache) and the planning in parts has gone on this
# long; the last part always is. (With its first part published, the pass after an urgent
# submit that voids every promise behind it spent 0.1-0.2 s of a 1 s pass at 10,000 queued
# on a plan the next parts replace within seconds.)
PARTS_EVERY_SECONDS = 5.0


@dataclass(frozen=True)
class Plan:
    """Admission's plan of the queue, and the database snapshot it was made from."""

    schedule: core.Schedule
    seen: Seen  # the state it was made of, and how long it holds
    made: float  # time.time() when it was made: its age, in any process
    checked_at: datetime  # when it was last found to still hold
    exact: bool = True  # admission's own pass; else the last pass's plan replayed
    token: str = ""  # the published plan's name; "" for one this process made
    # Whether it was found to hold as it was handed out (else it answers meanwhile, dated),
    # and answers about the inventory it was made of: good while it holds, since a change
    # of the nodes is a change of the queue (jobs_queue_change), and shared by its copies.
    holds: bool = False
    memo: dict = field(default_factory=dict, compare=False)

    def age(self) -> float:
        return time.time() - self.made


# The stored plan's format: a console upgraded never unpickles the plan of the one before.
FORMAT = 3


def _keys() -> tuple[str, str]:
    # One cache may serve consoles on several databases (a bench beside a checkout): a plan
    # is only ever checked against the database it was read from.
    name = settings.DATABASES["default"]["NAME"]
    return f"queue-plan-token:{FORMAT}:{name}", f"queue-plan:{FORMAT}:{name}"


@dataclass(frozen=True)
class Published:
    seen: Seen
    token: str
    at: float  # time.monotonic()


_published: Published | None = None  # the plan this process published last
# time.monotonic() of this process's first part, while it plans the queue in parts
_parts_began: float | None = None


def offer(schedule: core.Schedule, seen: Seen, *, more_to_come: bool = False) -> None:
    """Publish a pass's plan, unless the one this process published last is still there
    and still holds (a pass that changed nothing plans what it planned); again before it
    would expire. ``more_to_come``: the pass planned a part of the queue and the next pass
    follows at once (PARTS_EVERY_SECONDS). A failure is logged: the pass's decisions are
    written, and the web processes plan for themselves meanwhile."""
    global _published, _parts_began
    last, now = _published, time.monotonic()
    if not more_to_come:
        _parts_began = None
    elif _parts_began is None:
        _parts_began = now
    if (
        more_to_come
        and last is not None
        and now - max(last.at, _parts_began) < PARTS_EVERY_SECONDS
        and now - last.at <= MAX_AGE_SECONDS / 2  # not about to expire
        and published_token() == last.token  # still there for the web to answer from
    ):
        return
    if (
        seen.own
        or last is None
        or time.monotonic() - last.at > MAX_AGE_SECONDS / 2
        or published_token() != last.token
        or not last.seen.holds(seen.now)
    ):
        try:
            token = publish(schedule, seen)
        except Exception:
            log.exception("The admission pass's plan could not be published")
            return
        _published = Published(seen, token, time.monotonic())


def publish(schedule: core.Schedule, seen: Seen) -> str:
    """Offer the pass's plan to the web processes; returns its token."""
    token = uuid.uuid4().hex
    blob = pickle.dumps((token, schedule, seen, time.time()), protocol=pickle.HIGHEST_PROTOCOL)
    token_key, plan_key = _keys()
    # The plan first: a process that reads the new token finds the plan it names (or a
    # newer one, which names itself).
    cache.set(plan_key, blob, timeout=MAX_AGE_SECONDS)
    cache.set(token_key, token, timeout=MAX_AGE_SECONDS)
    return token


def published_token() -> str | None:
    """The name of the plan published last (None if none is): one small read."""
    return cache.get(_keys()[0])


def load() -> Plan | None:
    """The plan published last (None if it is gone): it names itself, and may be newer
    than the token read just before."""
    blob = cache.get(_keys()[1])
    if blob is None:
        return None
    token, schedule, seen, made = passes.without_gc(pickle.load)(_Frames(blob))
    return Plan(schedule, seen, made, checked_at=moment(seen.now), token=token)


class _Frames:
    """The blob as a file read frame by frame (pickle frames are 64 KiB): ``pickle.loads``
    holds the interpreter for the whole third of a second a long queue's plan takes, so a
    web process's requests would wait for it; reading each frame here first lets them run
    between two frames while a thread of the process takes the plan."""

    def __init__(self, blob: bytes):
        self.blob, self.view, self.at = blob, memoryview(blob), 0

    def read(self, size: int = -1) -> bytes:
        time.sleep(0)  # let another thread have the interpreter, if one waits for it
        start = self.at
        self.at = len(self.view) if size < 0 else min(start + size, len(self.view))
        return self.view[start : self.at].tobytes()

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readline(self) -> bytes:
        end = self.blob.find(b"\n", self.at)
        return self.read(-1 if end < 0 else end + 1 - self.at)


def forget() -> None:
    cache.delete_many(_keys())
