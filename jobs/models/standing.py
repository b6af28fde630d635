"""Where a queued job stands after the last admission pass (SPEC Q5, J24): its position,
the latest start it is promised, why it waits, the jobs it waits for, and the reservation
the next pass is held to.

A row of its own, not columns of the job: every pass that admits a job moves the position of
every job behind it, and rewriting ten thousand narrow rows costs a fraction of rewriting
ten thousand jobs (each a wide row under sixteen indexes and the queue's change triggers).
A database trigger (migration 0022) keeps exactly one row for each job whose status is
*queued*, made empty when it joins the queue and gone when it leaves; only the admission
pass fills it in (jobs.admission.standing).
"""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ObjectDoesNotExist
from django.db import models
from django.db.models import Value
from django.db.models.functions import Coalesce

# A queued job's place in the queue's pages: its position, or, before any pass placed it,
# after every position (the column is an integer). Indexed, so a page of /queue/ is read
# from its key onwards, wherever it is (jobs.views.queue_pages).
UNPLACED = 2**31 - 1


def queue_place(prefix: str = "standing__"):
    """The place as an expression over jobs (``prefix``: the path to their standing)."""
    return Coalesce(f"{prefix}position", Value(UNPLACED))


class Standing(models.Model):
    job = models.OneToOneField(
        "jobs.Job", primary_key=True, on_delete=models.CASCADE, related_name="standing"
    )
    position = models.PositiveIntegerField(null=True, blank=True)
    latest_start = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=500, blank=True)
    # The same reason as data (jobs/admission/words.py), worded in each reader's language.
    detail = models.JSONField(null=True, blank=True)
    blockers = ArrayField(models.BigIntegerField(), default=list, blank=True)
    # The pass's reservation, given back to the next pass as a commitment.
    reservation = models.JSONField(null=True, blank=True)

    class Meta:
        db_table = "jobs_standing"
        indexes = [models.Index(queue_place(""), "job", name="standing_place")]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.position}"


class Stands:
    """A job's standing read through the job, as pages and the API show it: nothing before
    a pass placed it (and nothing once it left the queue). Lists load the standings with
    their jobs (``select_related("standing")``)."""

    @property
    def queue_standing(self) -> Standing | None:
        try:
            return self.standing
        except ObjectDoesNotExist:
            return None

    @property
    def queue_position(self) -> int | None:
        standing = self.queue_standing
        return standing.position if standing else None

    @property
    def latest_start(self):
        standing = self.queue_standing
        return standing.latest_start if standing else None

    @property
    def wait_reason(self) -> str:
        standing = self.queue_standing
        return standing.reason if standing else ""

    @property
    def wait_detail(self):
        standing = self.queue_standing
        return standing.detail if standing else None

    @property
    def blockers(self) -> list[int]:
        standing = self.queue_standing
        return standing.blockers if standing else []
