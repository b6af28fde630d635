"""What the backend did around a job's own command, told on its events: data preparation
(SPEC J19) and lifecycle scripts (SPEC J23).

The backend numbers its notes per workload (``WorkloadStatus.notes``); each becomes one event,
in order, once: under a lock on the attempt's row, the events already told for the attempt
(by their ``item``, since the attempt began) say where to go on, so the beat's sync and a
launch following the same attempt never tell a note twice.
"""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext_noop

from console.words import said
from jobs import lifecycle
from jobs.models import Attempt, JobEvent
from resources.backends.base import Note, WorkloadStatus

DATA_ITEM = "data-prep"
SCRIPT_ITEM = "lifecycle"

_SCRIPT_RAN = {
    "before_start": gettext_noop(
        "Before start script on %(node)s (%(replica)s): exit 0 in %(seconds)s s."
    ),
    "on_failure": gettext_noop(
        "On failure script on %(node)s (%(replica)s): exit 0 in %(seconds)s s."
    ),
    "after_stop": gettext_noop(
        "After stop script on %(node)s (%(replica)s): exit 0 in %(seconds)s s."
    ),
}
_SCRIPT_FAILED = {
    "before_start": gettext_noop(
        "Before start script failed on %(node)s (%(replica)s): exit code %(code)s; last "
        "output: %(line)s. The job's command does not run."
    ),
    "on_failure": gettext_noop(
        "On failure script failed on %(node)s (%(replica)s): exit code %(code)s; last "
        "output: %(line)s."
    ),
    "after_stop": gettext_noop(
        "After stop script failed on %(node)s (%(replica)s): exit code %(code)s; last "
        "output: %(line)s."
    ),
}
_SCRIPT_TIMED_OUT = {
    "before_start": gettext_noop(
        "Before start script timed out on %(node)s (%(replica)s) after %(seconds)s s and was "
        "killed; last output: %(line)s. The job's command does not run."
    ),
    "on_failure": gettext_noop(
        "On failure script timed out on %(node)s (%(replica)s) after %(seconds)s s and was "
        "killed; last output: %(line)s."
    ),
    "after_stop": gettext_noop(
        "After stop script timed out on %(node)s (%(replica)s) after %(seconds)s s and was "
        "killed; last output: %(line)s."
    ),
}


# Attempt (id, creation) -> notes known told, in this process: a running job's notes rarely
# change, and a sync pass must not cost a query per attempt for nothing new.
_told: dict[tuple, int] = {}


def tell(attempt: Attempt, status: WorkloadStatus) -> None:
    key = (attempt.pk, attempt.created_at)
    if len(status.notes) <= _told.get(key, 0):
        return
    with transaction.atomic():
        Attempt.objects.select_for_update().filter(pk=attempt.pk).first()
        told = JobEvent.objects.filter(
            job_id=attempt.job_id, item__in=(DATA_ITEM, SCRIPT_ITEM), at__gte=attempt.created_at
        ).count()
        for note in status.notes[told:]:
            message, kind, item = words(note)
            lifecycle.record(attempt.job, message, kind=kind, item=item)
    if len(_told) > 10_000:  # ended attempts are never asked about again
        _told.clear()
    _told[key] = len(status.notes)


def words(note: Note) -> tuple[str, str, str]:
    """(message, kind, item) of one note."""
    facts = note.facts
    node, label = facts.get("node", ""), facts.get("label", "")
    if note.kind == "preparing":
        message = said(
            gettext_noop("Preparing data on %(node)s: %(label)s (%(done)s of %(total)s)…"),
            node=node, label=label, done=size(facts["done"]), total=size(facts["total"]),
        )  # fmt: skip
        return message, JobEvent.Kind.INFO, DATA_ITEM
    if note.kind == "prepared":
        message = said(
            gettext_noop("Data ready on %(node)s: %(label)s, %(total)s copied in %(seconds)s s."),
            node=node, label=label, total=size(facts["total"]), seconds=facts["seconds"],
        )  # fmt: skip
        return message, JobEvent.Kind.INFO, DATA_ITEM
    if note.kind == "reused":
        message = said(
            gettext_noop(
                "Data ready on %(node)s: %(label)s (%(total)s) reused, the copy there is "
                "current."
            ),
            node=node, label=label, total=size(facts["total"]),
        )  # fmt: skip
        return message, JobEvent.Kind.INFO, DATA_ITEM
    if note.kind == "prepare_failed":
        message = said(
            gettext_noop(
                "Data preparation failed on %(node)s: %(label)s: %(error)s. The job's command "
                "does not run."
            ),
            node=node, label=label, error=facts.get("error", ""),
        )  # fmt: skip
        return message, JobEvent.Kind.ERROR, DATA_ITEM
    return _script(facts)


def _script(facts: dict) -> tuple[str, str, str]:
    point = facts.get("point", "after_stop")
    values = {
        "node": facts.get("node", ""),
        "replica": facts.get("replica", ""),
        "seconds": facts.get("seconds", 0),
        "code": facts.get("exit_code"),
        "line": facts.get("last_line") or "-",
    }
    bad = JobEvent.Kind.ERROR if point == "before_start" else JobEvent.Kind.WARNING
    if facts.get("stopped"):
        message = said(
            gettext_noop("Lifecycle script on %(node)s (%(replica)s) killed: the job was stopped."),
            node=values["node"], replica=values["replica"],
        )  # fmt: skip
        return message, JobEvent.Kind.INFO, SCRIPT_ITEM
    if facts.get("timed_out"):
        return said(_SCRIPT_TIMED_OUT[point], **values), bad, SCRIPT_ITEM
    if facts.get("exit_code") != 0:
        return said(_SCRIPT_FAILED[point], **values), bad, SCRIPT_ITEM
    ran = {k: values[k] for k in ("node", "replica", "seconds")}
    return said(_SCRIPT_RAN[point], **ran), JobEvent.Kind.INFO, SCRIPT_ITEM


def size(count: int) -> str:
    """Bytes for people: "340 KB", "12 MB", "1.5 GB" (powers of 1000, as disks are sold)."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if count >= scale:
            value = count / scale
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{count} B"
