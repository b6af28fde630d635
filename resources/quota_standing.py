"""Quotas as the database holds them (SPEC G1): the limits of a department's tree, the
boards each project holds now, and where every quota a page shows stands."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Q, Sum

from console.models import Department, Project
from resources import hooks
from resources.models import Allocation, Node, Quota
from resources.quotas import ZERO, Held, Limit, Scope, Standing, standing


def limit_of(quota: Quota) -> Limit:
    return Limit(
        str(quota.holder),
        Scope(quota.accelerator_model_id, quota.pool_id),
        quota.guaranteed,
        quota.maximum,
    )


def with_related(quotas):
    return quotas.select_related("project", "department", "accelerator_model", "pool")


def held_now(projects: Iterable[int] | None = None) -> list[Held]:
    """Boards held by running work now, by project, accelerator model and pool: the live
    rows of the ledger."""
    live = Allocation.objects.live().filter(
        boards__gt=0, project__isnull=False, node__accelerator_model__isnull=False
    )
    if projects is not None:
        live = live.filter(project__in=list(projects))
    rows = live.values("project", "pool", "node__accelerator_model").annotate(held=Sum("boards"))
    return [
        Held(row["project"], row["node__accelerator_model"], row["pool"], row["held"])
        for row in rows.order_by()
    ]


@dataclass(frozen=True)
class Shown:
    """One quota on a page: the row, whose it is, and where it stands."""

    quota: Quota
    standing: Standing

    @property
    def holder(self):
        return self.quota.holder

    @property
    def is_department(self) -> bool:
        return self.quota.department_id is not None

    @property
    def bar(self) -> dict[str, float | None]:
        """Where the bar's parts go, in percent of the longest of maximum, guarantee, and
        used plus waiting: used within the guarantee, then borrowed, then waiting; the
        guarantee and the maximum as marks."""
        s = self.standing
        top = float(max(s.maximum or ZERO, s.guaranteed, s.used + s.waiting, Decimal(1)))

        def at(value: Decimal) -> float:
            return float(value) * 100 / top

        return {
            "within": at(s.within),
            "borrowed": at(s.borrowed),
            "used": at(s.used),
            "waiting": at(s.waiting),
            "guarantee": at(s.guaranteed),
            "maximum": None if s.maximum is None else at(s.maximum),
        }


def shown_for(projects: Sequence[Project]) -> list[Shown]:
    """The quotas of ``projects`` and of their departments, each with where it stands (a
    department's: all its projects' boards, used and waiting)."""
    project_ids = {project.pk for project in projects}
    department_ids = {p.department_id for p in projects if p.department_id}
    quotas = list(
        with_related(
            Quota.objects.filter(Q(project__in=project_ids) | Q(department__in=department_ids))
        )
    )
    if not quotas:  # nothing to show: the ledger and the queue need not be read
        return []
    members = {department: set(ids) for department, ids in _members(department_ids).items()}
    everyone = project_ids | {pk for ids in members.values() for pk in ids}
    held = held_now(everyone)
    waiting = hooks.waiting_for(everyone)
    shown = []
    for quota in quotas:
        mine = (
            members.get(quota.department_id, set()) if quota.department_id else {quota.project_id}
        )
        scope = Scope(quota.accelerator_model_id, quota.pool_id)
        shown.append(
            Shown(quota, standing(scope, quota.guaranteed, quota.maximum, mine, held, waiting))
        )
    return sorted(shown, key=_order)


def _members(departments: Iterable[int]) -> dict[int, list[int]]:
    members: dict[int, list[int]] = {}
    rows = Project.objects.filter(department__in=list(departments)).values_list("department", "pk")
    for department, pk in rows:
        members.setdefault(department, []).append(pk)
    return members


def every_shown() -> list[Shown]:
    """Every quota of the platform (the admin's view)."""
    projects = list(
        Project.objects.filter(
            Q(quotas__isnull=False) | Q(department__quotas__isnull=False)
        ).distinct()
    )
    shown = shown_for(projects)
    seen = {item.quota.pk for item in shown}
    # A department's quota with no project under it yet: nothing used, nothing waiting.
    for quota in with_related(Quota.objects.filter(department__isnull=False)):
        if quota.pk not in seen:
            shown.append(
                Shown(quota, Standing(quota.guaranteed, quota.maximum, Decimal(0), Decimal(0)))
            )
    return sorted(shown, key=_order)


def _order(item: Shown):
    quota = item.quota
    department = quota.department or (quota.project.department if quota.project_id else None)
    return (
        department.name if department else "\uffff",
        quota.project_id is not None,
        str(quota.holder),
        quota.accelerator_model.name,
        quota.pool.name if quota.pool_id else "",
    )


def capacity() -> dict[Scope, int]:
    """Boards the cluster has, by model on every node and by model in each pool."""
    boards: dict[Scope, int] = {}
    rows = (
        Node.objects.live()
        .filter(accelerator_model__isnull=False, board_count__gt=0)
        .values("accelerator_model", "pool")
        .annotate(boards=Sum("board_count"))
        .order_by()
    )
    for row in rows:
        model, pool = row["accelerator_model"], row["pool"]
        for scope in (Scope(model), *([Scope(model, pool)] if pool is not None else [])):
            boards[scope] = boards.get(scope, 0) + row["boards"]
    return boards


def department_limits(department: Department, *, but: Quota | None = None) -> list[Limit]:
    quotas = with_related(Quota.objects.filter(department=department))
    return [limit_of(q) for q in quotas if but is None or q.pk != but.pk]


def children_limits(
    department: Department, *, but: Quota | None = None, projects=None
) -> list[Limit]:
    """The quotas of the department's projects (or of ``projects``, when it is about to
    have those), all but ``but``."""
    if projects is None:
        projects = department.projects.all()
    quotas = with_related(Quota.objects.filter(project__in=list(projects)))
    return [limit_of(q) for q in quotas if but is None or q.pk != but.pk]


def project_panel(request, project: Project) -> tuple[str, dict]:
    """The project page's card: its quotas and its department's, where each stands."""
    return "resources/quota_panel.html", {
        "project": project,
        "shown": shown_for([project]),
    }
