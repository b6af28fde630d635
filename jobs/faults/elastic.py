"""Elastic growth (SPEC F5, seed 000 "弹性训练"): a running elastic job admitted on fewer
nodes than it asked for grows back once the cluster has room for more.

Growing is an interruption like a fault's (jobs.faults.recovery.interrupt with
Cause.SCALE_UP): SIGTERM so it saves a checkpoint, then back in the queue ahead of its
priority at the node count it asked for, and the admission pass starts it on what fits then.
Whether more would fit is asked of the admission model itself (jobs.scheduling.predict.
room_to_grow), so the count looked at is the one the pass will give it. The room must last
``scale_up_after_seconds`` first: a job stopped to gain a node that is gone a second later
would lose its progress since the last checkpoint for nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from console import limits
from console.words import counted, said
from jobs.admission.state import load, requeued
from jobs.faults import diagnosis, recovery
from jobs.faults.marks import mark_once
from jobs.faults.policy import Cause
from jobs.models import Attempt, Job, Phase
from jobs.scheduling.predict import room_to_grow
from jobs.scheduling.quotas import per_node

log = logging.getLogger(__name__)

KEY = "room_since"  # in Attempt.watch; other keys there belong to the log watch


def candidates() -> list[Attempt]:
    """Running attempts of elastic jobs allowed to grow that run on fewer nodes than asked."""
    attempts = Attempt.objects.filter(
        state=Attempt.State.RUNNING,
        stop_cause="",
        ended_at__isnull=True,
        subtask__isnull=True,
        job__phase=Phase.RUNNING,
        job__elastic_scale_up=True,
        job__elastic_min_nodes__isnull=False,
    ).select_related("job")
    return [a for a in attempts if a.job.nodes < a.job.nodes_asked]


def grow(now: datetime | None = None) -> list[int]:
    """One look at every candidate; returns the ids of the attempts interrupted to grow."""
    attempts = candidates()
    if not attempts:
        return []
    now = now or timezone.now()
    state = load(now)
    jobs = requeued(Job.objects.filter(pk__in=[a.job_id for a in attempts]))
    wait = limits.current().scale_up_after_seconds
    grown = []
    for attempt in attempts:
        job = attempt.job
        queued = jobs.get(job.pk)
        count = 0
        if queued is not None:
            count = room_to_grow(
                state.nodes, state.running, state.queue, queued, state.now, state.committed,
                caps=state.caps, used=without(state, queued, job),
            )  # fmt: skip
        if count <= job.nodes:
            if KEY in (attempt.watch or {}):
                _forget(attempt)
            continue
        since = _since(attempt, now)
        if (now - since).total_seconds() < wait:
            continue
        message = said(
            counted(
                "%(more)s more node is free: growing from %(old)s to %(new)s.",
                "%(more)s more nodes are free: growing from %(old)s to %(new)s.",
                "more",
            ),
            more=count - job.nodes,
            old=job.nodes,
            new=count,
        )
        if recovery.interrupt(
            attempt, Cause.SCALE_UP, "scale-up", diagnosis.nodes_of(attempt), message
        ):
            log.info("job %s grows from %s to %s nodes", job.pk, job.nodes, count)
            grown.append(attempt.pk)
    return grown


def without(state, queued, job: Job) -> dict[int, int]:
    """Eighths of boards each quota cap's projects hold now, less this job's own: it gives
    them back when requeued to grow (SPEC G1)."""
    spec = next((a for a in queued.alternatives if a.spec_id == job.spec_id), None)
    if spec is None:
        return dict(state.used)
    own = per_node(spec) * job.nodes
    return {
        cap.id: state.used.get(cap.id, 0)
        - (own if cap.covers(queued.project, spec, queued.pool) else 0)
        for cap in state.caps
    }


def _since(attempt: Attempt, now: datetime) -> datetime:
    """When the room was first seen, recorded now if it was not. Only this key of the
    watch is written, in one statement: the log watch updates its own keys concurrently."""
    mark_once(attempt.pk, KEY, now.isoformat())
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT watch ->> %s FROM {Attempt._meta.db_table} WHERE id = %s", [KEY, attempt.pk]
        )
        row = cursor.fetchone()
    seen = parse_datetime(row[0]) if row and row[0] else None
    return seen or now


def _forget(attempt: Attempt) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Attempt._meta.db_table} SET watch = watch - %s WHERE id = %s",
            [KEY, attempt.pk],
        )
