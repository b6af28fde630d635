"""What the fuzz test sends: every address of the site (walked from the URL resolver), the
parameters each view reads, and the values to send, hostile and plausible."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from django.urls import URLResolver, get_resolver
from django.urls.resolvers import RegexPattern
from hypothesis import strategies as st

from console import limits
from jobs.filtersets import JobFilter
from jobs.forms import rows
from jobs.forms.job import JobForm
from resources.catalog.kinds import KINDS as CATALOG_KINDS
from resources.filtersets import CatalogFilterSet
from resources.forms.catalog import item_form_class, version_form_class
from resources.forms.inventory import NodeSettingsForm
from resources.forms.quotas import DepartmentForm, QuotaForm
from resources.views.inventory import KINDS as INVENTORY_KINDS
from tests.strategies import pick

PART = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")

JOB_FORM = {
    *JobForm.base_fields,
    "row_action",
    *(
        kind.name(i, name)
        for kind in (rows.SUBTASKS, rows.DATASETS)
        for i in range(3)
        for name in kind.fields
    ),
    rows.SUBTASKS.count_field(),
    rows.DATASETS.count_field(),
    # The availability panel's state, kept in the form across its refreshes.
    "availability",
    "availability_rows",
}
CATALOG_FORMS = {
    name
    for kind in CATALOG_KINDS.values()
    for form in (item_form_class(kind), version_form_class(kind) if kind.versioned else None)
    if form is not None
    for name in form.base_fields
}
INVENTORY_FORMS = {
    name
    for kind in INVENTORY_KINDS.values()
    for name in (*kind.form.base_fields, *NodeSettingsForm.base_fields)
}
QUOTA_FORM = set(QuotaForm.base_fields)
DEPARTMENT_FORM = set(DepartmentForm.base_fields)
ADMIN = {"q", "o", "p", "e", "all", "_changelist_filters", "action", "_selected_action", "post",
         "index", "_popup", "_to_field", "_save", "term", "app_label", "model_name",
         "field_name", "username", "password", "password1", "password2", "name",
         "old_password", "new_password1", "new_password2"}  # fmt: skip

# What each view reads (grep the views for request.GET / request.POST, and their forms and
# filter sets). The exploration adds other names now and then: unknown ones must do no harm.
PARAMETERS: dict[str, set[str]] = {
    "login": {"username", "password", "next"},
    "logout": {"next"},
    "switch_project": {"project", "next"},
    "settings": {limit.name for limit in limits.LIMITS},
    "cluster": {"spec", "specs", "model", "page"},
    "usage": {"days", "unit", "by", "export", "measure"},
    "quota_settings": set(),
    "quota_new": QUOTA_FORM,
    "quota_edit": QUOTA_FORM,
    "quota_delete": set(),
    "department_new": DEPARTMENT_FORM,
    "department_edit": DEPARTMENT_FORM,
    "department_delete": set(),
    "cluster_node_return": set(),
    "settings_faults": {"node", "kind", "detail"},
    "settings_fault_clear": set(),
    "catalog:list": {"show", "page", *CatalogFilterSet.base_filters},
    "catalog:create": CATALOG_FORMS,
    "catalog:edit": CATALOG_FORMS,
    "catalog:add_version": CATALOG_FORMS,
    "catalog:favourite": {"favourite", "compact", "next"},
    "inventory_list": {"retired"},
    "inventory_new": INVENTORY_FORMS,
    "inventory_edit": INVENTORY_FORMS,
    "job_list": {*JobFilter.base_filters, "sort", "after", "before", "per_page"},
    "job_bulk_delete": {"ids", "confirm"},
    "job_new": JOB_FORM,
    "job_form_refresh": JOB_FORM,
    "job_form_predict": JOB_FORM,
    "job_form_availability": JOB_FORM,
    "job_clone": JOB_FORM,
    "job_from_devenv": JOB_FORM,
    "job_detail": {"attempt", "replica"},
    "job_live": {"phase"},
    "job_logs": {"attempt", "replica"},
    "job_logs_more": {"attempt", "replica", "offset"},
    "job_log_download": {"attempt", "replica"},
    "job_usage": {"attempt"},
    "job_terminal": set(),  # reads only its path; the WebSocket its size (jobs/terminal)
    "job_duration": {"hours"},
    "job_priority": {"priority"},
    "job_devenv": {"name"},
    # Tools read only their path; what they serve is behind /tools/<id>/ (the ASGI proxy).
    "job_tensorboard": set(),
    "job_tensorboard_status": set(),
    "job_tensorboard_stop": set(),
    "devenv_list": set(),
    "devenv_delete": set(),
    "devenv_lab": set(),
    "devenv_lab_status": set(),
    "devenv_lab_stop": set(),
    "queue": {"scope"},
    "queue_priority": {"priority"},
    "set_language": {"language", "next"},
    "api_tokens": {"name", "scope", "expires"},
    "notifications": {"action", "email", "webhook", "chat", "url", "id"},
    "api_token_revoke": set(),
    "api_docs": set(),
    # The JSON API (jobs/api): its query parameters. Its bodies are JSON, which a form post
    # is not: spoiling a form's fields one by one there would only ask the same 400 again.
    # The job's fields go through the job form (spoilt above); tests/jobs/test_api*.py send
    # JSON bodies, good and bad.
    "api:list_jobs": {*JobFilter.base_filters, "sort", "after", "before", "per_page"},
    "api:logs": {"attempt", "replica", "offset"},
    "api:usage": {"attempt"},
    "api:queue": {"project", "mine", "after", "before", "at"},
}
# Routes whose parameters are one Django form, which checks each field on its own: one
# request with all of them spoilt tries them all.
FORMS = {"login", "settings", "catalog:create", "catalog:edit", "catalog:add_version",
         "inventory_new", "inventory_edit", "quota_new", "quota_edit", "department_new",
         "department_edit", "job_new", "job_form_refresh", "job_form_predict",
         "job_form_availability", "job_clone", "job_from_devenv"}  # fmt: skip
NOISE = ["page", "next", "id", "pk", "format", "x" * 300]

# A user's password changed, or the user deleted, logs the fuzz's own sessions out.
LEFT_OUT = {"admin:auth_user_password_change", "admin:auth_user_delete", "admin:password_change"}

# What breaks most: unicode digits, signs, numbers past a bigint or past int()'s digits, NUL,
# and a bare word where a path is expected. Each parameter gets each of these in the sweep.
KEY = ["\u00b2", "-1", "9" * 15, "9" * 20, "9" * 5000, "a\x00b", "", "x" * 10_000]
HOSTILE = [
    "", " ", "0", "-1", "1.5", "1e9", "0x10", "+1", "\u00b2", "\u0663", "\uff11",
    str(2**31), str(2**63), str(10**30), "9" * 5000, "\x00", "a\x00b", "%00", "x" * 10_000,
    "' OR 1=1 --", "<script>alert(1)</script>", "{{ 7*7 }}", "../../etc/passwd", "/", "//x",
    "https://evil.example/", "javascript:alert(1)", "\u202e", "\U0001f600", "\ud7ff",
    "null", "None", "true", "NaN", "-0", "remove_dataset:\u00b2", "add_subtask",
    "remove_subtask:99999999999999999999", "\r\nSet-Cookie: x=1",
]  # fmt: skip


@dataclass
class Route:
    name: str
    parts: list  # literal strings and (converter, name) pairs, in order
    parameters: set[str] = field(default_factory=set)

    @property
    def admin(self) -> bool:
        return self.name.startswith("admin:")

    @property
    def form(self) -> bool:
        return self.admin or self.name in FORMS

    def __str__(self) -> str:
        return "".join(p if isinstance(p, str) else f"<{p[0]}:{p[1]}>" for p in self.parts)


def _split(pattern) -> list:
    if isinstance(pattern, RegexPattern):
        return [("regex", pattern._regex)]
    text, parts, end = str(pattern), [], 0
    for match in PART.finditer(text):
        parts.append(text[end : match.start()])
        parts.append((match["converter"] or "str", match["name"]))
        end = match.end()
    parts.append(text[end:])
    return [p for p in parts if p != ""]


def routes() -> list[Route]:
    """Every address the site answers, in the resolver's order."""
    found: list[Route] = []

    def walk(patterns, prefix: list, namespace: str | None):
        for pattern in patterns:
            parts = prefix + _split(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, parts, pattern.namespace or namespace)
                continue
            name = f"{namespace}:{pattern.name}" if namespace else str(pattern.name)
            route = Route(name, parts)
            route.parameters = set(PARAMETERS.get(name, set()))
            if route.admin:
                route.parameters |= ADMIN
            if name not in LEFT_OUT:
                found.append(route)

    walk(get_resolver().url_patterns, ["/"], None)
    return found


@dataclass
class World:
    """The real objects the fuzz addresses: ids per kind of address, and plausible values."""

    ids: dict[str, list[int]]  # "job", "devenv", "catalog:<kind>", "inventory:<kind>",
    # "admin:<app>_<model>"; the first is the one to address, the last the one to end
    slugs: list[str]
    plausible: list[str]
    bases: dict[str, dict]  # valid parameters per route name, which the fuzz then spoils

    def base(self, route: Route) -> list[tuple[str, str]]:
        given = self.bases.get(route.name, {})
        return [
            (key, str(v))
            for key, value in given.items()
            for v in (value if isinstance(value, list) else [value])
        ]


def deep_role(route: Route) -> str:
    """Who gets furthest into the route's view: who owns what it addresses, or may run it."""
    if route.name.endswith("login"):
        return "anonymous"
    if route.admin or route.name.startswith(
        ("settings", "inventory", "cluster", "quota", "department")
    ):
        return "admin"
    if route.name == "queue_priority":
        return "lead"
    return "alice"


def ending(route: Route) -> bool:
    """Whether the route deletes or ends what it addresses (or the actor's session)."""
    return any(word in route.name for word in ("delete", "retire", "stop", "logout"))


def spoilt(base: list, route: Route, names, given: str) -> list[tuple[str, str]]:
    """``base`` with each of ``names`` replaced by ``given``."""
    kept = [(k, v) for k, v in base if k not in names]
    return kept + [(name, given) for name in sorted(names)]


# Made once (tests/strategies.py says why).
CATALOG_KIND = st.sampled_from(sorted(CATALOG_KINDS))
INVENTORY_KIND = st.sampled_from([*sorted(INVENTORY_KINDS), "nope", "-"])
HOSTILE_INT = st.sampled_from(["0", str(2**31), str(2**63), str(10**30), "9" * 40, "00"])
HOSTILE_ID = st.sampled_from(["0", "x", "9" * 40, "%E2%80%AE", "a/b", "-1"])
PATH_TEXT = st.text(min_size=1, max_size=20).filter(lambda t: "/" not in t)


@functools.cache
def _regex(pattern: str) -> st.SearchStrategy[str]:
    return st.from_regex(pattern, fullmatch=True)


def _id_pool(route: Route, values: dict, world: World) -> list[int]:
    name = route.name
    if name.startswith("catalog:"):
        return world.ids.get(f"catalog:{values.get('kind')}", [])
    if name.startswith("inventory"):
        return world.ids.get(f"inventory:{values.get('kind')}", [])
    if name.startswith(("quota", "department")):
        return world.ids[name.split("_")[0]]
    if name.startswith(("devenv", "job_from_devenv")):
        return world.ids["devenv"]
    if name.startswith(("job", "queue", "api:")):
        return world.ids["job"]
    if route.admin:
        model = "_".join(name.split(":", 1)[1].split("_")[:2])
        return world.ids.get(f"admin:{model}", [])
    return []


def fill(route: Route, world: World, draw) -> str:
    """A concrete path for ``route``: mostly real ids and slugs, sometimes hostile ones."""
    values: dict[str, str] = {}
    path = []
    for part in route.parts:
        if isinstance(part, str):
            path.append(part)
            continue
        converter, name = part
        if converter == "regex":
            path.append(draw(_regex(name)))
            continue
        hostile = draw(st.integers(0, 4)) == 0
        if converter == "catalog_kind":
            value = draw(CATALOG_KIND)
        elif converter == "slug" and name == "kind":
            value = draw(INVENTORY_KIND)
        elif converter == "slug":
            value = draw(pick((*world.slugs, "nope", "a" * 300, "-_-")))
        elif converter == "int" or name in ("object_id", "content_type_id", "id"):
            pool = _id_pool(route, values, world)
            if pool and not hostile:
                value = str(draw(pick(tuple(pool))))
            elif converter == "int":
                value = draw(HOSTILE_INT)
            else:
                value = draw(HOSTILE_ID)
        else:
            value = draw(PATH_TEXT)
        values[name] = value
        path.append(value)
    return "".join(path)


@functools.cache
def _values(plausible: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(HOSTILE),
        st.sampled_from(plausible),
        st.text(max_size=40),
        st.integers(-(2**70), 2**70).map(str),
    )


def parameters(route: Route, world: World, draw) -> list[tuple[str, str]]:
    """Some of the route's parameters, and now and then another name (a name may repeat, as
    ticked boxes do), over the route's valid parameters half of the time."""
    chosen = draw(_names(tuple(sorted(route.parameters))))
    base = world.base(route) if draw(st.booleans()) else []
    pairs = [(key, given) for key, given in base if key not in chosen]
    values = _values(tuple(world.plausible))
    for name in chosen:
        pairs.append((name, draw(values)))
    return pairs


@functools.cache
def _names(parameters: tuple[str, ...]) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from([*parameters, *NOISE]), max_size=8)


def real_paths(route: Route, world: World, *, last: bool = False) -> list[str]:
    """The route's paths with real values: one per kind where it takes a kind, on the first
    id of its pool (the last one with ``last``)."""
    paths = [[]]
    for part in route.parts:
        if isinstance(part, str):
            paths = [[*p, part] for p in paths]
            continue
        converter, name = part
        if converter == "regex":
            options = ["auth/"] if "app_label" in name else ["nope/"]
        elif converter == "catalog_kind":
            options = sorted(CATALOG_KINDS)
        elif converter == "slug" and name == "kind":
            options = sorted(INVENTORY_KINDS)
        elif converter == "slug":
            options = world.slugs[:1]
        else:
            options = None
        if options is not None:
            paths = [[*p, (name, o)] for p in paths for o in options]
            continue
        grown = []
        for p in paths:
            values = dict(x for x in p if isinstance(x, tuple))
            pool = _id_pool(route, values, world) or [1]
            grown.append([*p, (name, str(pool[-1] if last else pool[0]))])
        paths = grown
    return ["".join(x if isinstance(x, str) else x[1] for x in p) for p in paths]
