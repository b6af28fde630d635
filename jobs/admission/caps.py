"""The quota maximums admission holds jobs to (SPEC G1), read as the pure gate's caps
(jobs.scheduling.quotas), with the boards their projects hold now."""

from __future__ import annotations

from collections import defaultdict
from math import ceil, floor

from console.models import Project
from jobs.scheduling.quotas import EIGHTHS, NO_MAXIMUM, Borrowed, Cap, borrows, gate
from jobs.scheduling.reasons import HeldForQuota
from resources.models import Quota
from resources.quota_standing import held_now
from resources.quotas import Scope


def caps() -> list[Cap]:
    """Every quota, as a cap (one without a maximum holds nobody back, but its guarantee
    tells who borrows), and the implicit caps of the projects without one (:func:`_none`)."""
    quotas = list(Quota.objects.select_related("project", "department"))
    if not quotas:
        return []
    departments = {q.department_id for q in quotas if q.department_id}
    of: dict[int, int | None] = dict(Project.objects.values_list("pk", "department"))
    names = dict(Project.objects.values_list("pk", "name"))
    members: dict[int, set[int]] = defaultdict(set)
    for project, department in of.items():
        if department in departments:
            members[department].add(project)
    found = [
        Cap(
            id=quota.pk,
            holder=str(quota.holder),
            projects=frozenset(
                {quota.project_id} if quota.project_id else members[quota.department_id]
            ),
            model=quota.accelerator_model_id,
            pool=quota.pool_id,
            maximum=NO_MAXIMUM if quota.maximum is None else floor(quota.maximum * EIGHTHS),
            guaranteed=floor(quota.guaranteed * EIGHTHS),
        )
        for quota in quotas
    ]
    return found + _none(found, of, names)


def _none(found: list[Cap], of: dict[int, int | None], names: dict[int, str]) -> list[Cap]:
    """A project with no quota (of its own or its department's) where another project is
    guaranteed boards is guaranteed none there: whatever it runs there is borrowed, marked so
    and reclaimable, and yields to the guarantees (SPEC G2). Without this a team outside the
    quotas could hold a guaranteed team's boards for ever. Ids below zero: no quota's."""
    scopes = dict.fromkeys(
        Scope(cap.model, cap.pool) for cap in found if len(cap.projects) == 1 and cap.guaranteed
    )
    implicit: list[Cap] = []
    for scope in scopes:
        covered = {
            project
            for cap in found
            if Scope(cap.model, cap.pool).covers(scope)
            for project in cap.projects
        }
        for project in sorted(set(of) - covered):
            implicit.append(
                Cap(
                    id=-len(implicit) - 1,
                    holder=names[project],
                    projects=frozenset({project}),
                    model=scope.model,
                    pool=scope.pool,
                    maximum=NO_MAXIMUM,
                )
            )
    return implicit


def load_caps() -> tuple[list[Cap], dict[int, int]]:
    """Every quota as a cap, and the eighths of boards each cap's projects
    hold now (the ledger's live rows: jobs, development environments)."""
    found = caps()
    if not found:
        return [], {}
    held = held_now({project for cap in found for project in cap.projects})
    used = {
        cap.id: sum(
            ceil(row.boards * EIGHTHS)
            for row in held
            if row.project in cap.projects
            and Scope(cap.model, cap.pool).covers(Scope(row.model, row.pool))
        )
        for cap in found
    }
    return found, used


def beyond_maximum(job) -> HeldForQuota | None:
    """Why ``job`` (a draft) could never start under the quotas: on every spec, even at its
    elastic minimum, it asks more than a maximum over it; None when some spec fits."""
    reason = gate([job], caps(), {}).held.get(job.id)
    return reason if reason is not None and reason.never else None


def borrowed_if_started(schedule, draft, spec_id: int) -> Borrowed | None:
    """Whether ``draft``, starting now on ``spec_id`` after what the plan ``schedule``
    admits now, would run on borrowed boards (SPEC G2; the form says so before Create)."""
    if not schedule.quota.caps:
        return None
    spec = next(a for a in draft.alternatives if a.spec_id == spec_id)
    by_id = {job.id: job for job in schedule.order}
    admitted = []
    for admission in schedule.admissions:
        job = by_id[admission.job_id]
        started = next(a for a in job.alternatives if a.spec_id == admission.spec_id)
        admitted.append((job, started, len(admission.placements)))
    return borrows(schedule.quota, admitted, draft, spec)
