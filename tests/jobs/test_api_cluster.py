"""The API's cluster and catalog reads (SPEC I1): the same answers as /cluster/, the job
form's choices and /catalog/, for what the caller may see only."""

from __future__ import annotations

from console.sharing import Access
from resources.placement import availability
from tests.jobs.test_api import bearer
from tests.resources.catalog_factories import DatasetFactory, DatasetVersionFactory


def test_availability_is_the_cluster_page_s_answer(alice, vision, inventory):
    api = bearer(alice)
    answer = api.get("/api/v1/availability", {"spec": inventory["gpu"].name}).json()
    (expected,) = availability.compute(alice, vision, spec_ids=[inventory["gpu"].pk]).summaries
    (spec,) = answer
    assert spec["name"] == inventory["gpu"].name and spec["accelerator"] == "A100"
    assert spec["largest_job_now"] == expected.largest_job
    assert [(p["pool"], p["now"], p["nodes"], p["never"]) for p in spec["places"]] == [
        (a.pool.name if a.pool else None, a.now, a.nodes, a.never) for a in expected.answers
    ]
    assert api.get("/api/v1/availability", {"spec": "nope"}).json() == []
    assert len(api.get("/api/v1/availability").json()) >= 2


def test_pools_images_and_the_catalog_show_what_the_caller_may_use(alice, charlie, vision,
                                                                   inventory):  # fmt: skip
    assert [p["name"] for p in bearer(alice).get("/api/v1/pools").json()] == ["vision-pool"]
    assert bearer(charlie).get("/api/v1/pools").json() == []  # not a pool of speech's
    images = {i["name"]: i for i in bearer(alice).get("/api/v1/images").json()}
    assert inventory["image"].name in images
    private = DatasetFactory(owner=alice, project=vision, name="mine", others_access=Access.NONE)
    DatasetVersionFactory(dataset=private, name="v1")
    mine = bearer(alice).get("/api/v1/catalog/datasets").json()
    assert {"name": "mine", "versions": ["v1"]}.items() <= next(
        d for d in mine if d["name"] == "mine"
    ).items()
    assert "mine" not in [d["name"] for d in bearer(charlie).get("/api/v1/catalog/datasets").json()]
    assert bearer(alice).get("/api/v1/catalog/nope").status_code == 404
