"""SPEC P, generated: every address that takes a catalog item or a pool, for every kind of
actor and every level of sharing.

Catalog items (datasets, annotation sets, algorithms, models, volumes) of alice's in *vision*:

* **see** (details, favourite): the owner, admins, and members of the item's project when it
  is shared read-only or read-write; anyone else gets 404.
* **change** (edit, delete, add a version): the owner and admins only, whatever the sharing
  (sharing lets others *use* an item in their jobs, not rewrite it). A member who sees it
  gets 403; one who does not, 404.

Pools belong to the inventory, which only platform admins edit (403 for everyone else, who
knows pools exist from the job form); a pool is offered on the job form only to projects it
is allowed for.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from console.sharing import Access
from resources.catalog.kinds import KINDS
from resources.models import ResourcePool
from tests.helpers import check_answer
from tests.resources.catalog_factories import make_item
from tests.resources.factories import ResourcePoolFactory

pytestmark = pytest.mark.django_db

ROLES = ("owner", "member", "lead", "outsider", "admin", "anonymous")
SHARING = tuple(Access)
LOGIN = "login"


# --- catalog items ---------------------------------------------------------------------------


def catalog_expected(role: str, sharing: Access, kind: str):
    if role == "anonymous":
        return LOGIN
    if role in ("owner", "admin"):
        return "ok"
    if role == "outsider" or sharing == Access.NONE:
        return 404
    return "ok" if kind == "see" else 403


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    suffix: str
    kind: str  # "see" or "change"
    ok: int = 200
    data: dict = field(default_factory=dict)
    effect: str = ""
    needs: str = ""  # "versioned" or "favouritable": kinds that offer it


CATALOG_ENDPOINTS = [
    Endpoint("detail", "get", "", "see"),
    Endpoint("favourite", "post", "favourite/", "see", 302, {"favourite": "1"}, "favourite",
             "favouritable"),
    Endpoint("edit form", "get", "edit/", "change"),
    Endpoint("edit", "post", "edit/", "change", 422, {"name": "renamed"}),
    Endpoint("delete form", "get", "delete/", "change"),
    Endpoint("delete", "post", "delete/", "change", 302, effect="deleted"),
    Endpoint("version form", "get", "versions/new/", "change", needs="versioned"),
    Endpoint("version", "post", "versions/new/", "change", 302,
             {"name": "v2", "path": "users/alice/data/v2"}, "versioned", "versioned"),
]  # fmt: skip

CATALOG_CASES = [
    (slug, endpoint)
    for slug, kind in KINDS.items()
    for endpoint in CATALOG_ENDPOINTS
    if endpoint.needs == "" or getattr(kind, endpoint.needs)
]


@pytest.mark.parametrize("sharing", SHARING, ids=[s.value for s in SHARING])
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("slug", "endpoint"), CATALOG_CASES, ids=[f"{s}-{e.name}" for s, e in CATALOG_CASES]
)
def test_catalog_matrix(client, actors, vision, slug, endpoint, role, sharing):
    owner = actors["owner"]
    item = make_item(slug, owner=owner, project=vision, access=sharing)
    if actors[role] is not None:
        client.force_login(actors[role])
    response = getattr(client, endpoint.method)(
        f"/catalog/{slug}/{item.pk}/{endpoint.suffix}", endpoint.data
    )
    want = catalog_expected(role, sharing, endpoint.kind)
    check_answer(response, want, endpoint.ok)
    if endpoint.effect:
        model = KINDS[slug].model
        happened = {
            "deleted": lambda: not model.objects.filter(pk=item.pk).exists(),
            "favourite": lambda: item.favourited_by.filter(
                pk=getattr(actors[role], "pk", 0)
            ).exists(),
            "versioned": lambda: item.versions.filter(name="v2").exists(),
        }[endpoint.effect]()
        assert happened == (want == "ok"), f"{endpoint.name} by {role} on {sharing}"


# --- pools -----------------------------------------------------------------------------------

POOL_ENDPOINTS = [
    ("edit form", "get", "/settings/inventory/pools/{pk}/", {}, 200),
    ("edit", "post", "/settings/inventory/pools/{pk}/", {"name": ""}, 422),
    ("retire form", "get", "/settings/inventory/pools/{pk}/retire/", {}, 200),
    ("retire", "post", "/settings/inventory/pools/{pk}/retire/", {}, 302),
]


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "not-allowed"])
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("endpoint", POOL_ENDPOINTS, ids=[e[0] for e in POOL_ENDPOINTS])
def test_pool_matrix(client, actors, vision, endpoint, role, allowed):
    name, method, path, data, ok = endpoint
    pool = ResourcePoolFactory(name="vision-pool")
    if allowed:
        pool.projects.add(vision)
    if actors[role] is not None:
        client.force_login(actors[role])
    response = getattr(client, method)(path.format(pk=pool.pk), data)
    want = LOGIN if role == "anonymous" else "ok" if role == "admin" else 403
    check_answer(response, want, ok)
    retired = ResourcePool.objects.get(pk=pool.pk).retired_at is not None
    assert retired == (name == "retire" and want == "ok")


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "not-allowed"])
@pytest.mark.parametrize("role", ["owner", "member", "lead", "outsider"])
def test_pool_on_the_job_form(client, actors, vision, role, allowed):
    """A pool is offered, and accepted, only where the user's current project may use it."""
    pool = ResourcePoolFactory(name="vision-pool")
    if allowed:
        pool.projects.add(vision)
    client.force_login(actors[role])
    page = client.get("/jobs/new/").content.decode()
    offered = f'value="{pool.pk}">vision-pool' in page
    assert offered == (allowed and role != "outsider")
    response = client.post("/jobs/new/", {"name": "p", "pool": str(pool.pk)})
    assert response.status_code == 422
    errors = response.context["form"].errors.get("pool", [])
    refused = any("valid choice" in error for error in errors)
    assert refused == (not offered)
