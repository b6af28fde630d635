"""The job list: search (O1), batch view, bulk delete (O5), a fixed number of queries."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from console.sharing import Access
from jobs.models import Job, JobType, Status
from tests.jobs.factories import JobFactory
from tests.resources.catalog_factories import AlgorithmFactory
from tests.resources.factories import NodeSpecFactory

pytestmark = pytest.mark.django_db


def names(client, query=""):
    return {job.name for job in client.get(f"/jobs/?{query}").context["page"].rows}


def test_search_by_every_field(client, alice, bob, vision):
    spec = NodeSpecFactory(name="big")
    fav = AlgorithmFactory(name="shared-algo", owner=bob, project=vision, favourited_by=[alice])
    JobFactory(owner=alice, project=vision, name="alpha", output_path="outputs/a")
    JobFactory(
        owner=alice, project=vision, name="beta", specs=[spec], status=Status.ERROR, phase="error"
    )
    JobFactory(
        owner=bob,
        project=vision,
        name="gamma",
        algorithm=fav,
        others_access=Access.READ_ONLY,
        output_path="outputs/g",
    )
    client.force_login(alice)
    assert names(client) == {"alpha", "beta", "gamma"}
    assert names(client, "name=alp") == {"alpha"}
    assert names(client, "status=error") == {"beta"}
    assert names(client, "creator=bob") == {"gamma"}
    assert names(client, f"spec={spec.pk}") == {"beta"}
    assert names(client, "output_path=outputs/g") == {"gamma"}
    assert names(client, f"favourite_algorithm={fav.pk}") == {"gamma"}
    mine = Job.objects.get(name="alpha").algorithm
    assert names(client, f"my_algorithm={mine.pk}") == {"alpha"}


def test_batch_view(client, alice, vision):
    JobFactory(owner=alice, project=vision, name="one", job_type=JobType.BATCH)
    JobFactory(owner=alice, project=vision, name="two")
    client.force_login(alice)
    assert names(client, "job_type=batch") == {"one"}


def test_bad_filter_values_do_not_break(client, alice):
    client.force_login(alice)
    assert client.get("/jobs/?status=nope&spec=abc&after=999&sort=zzz").status_code == 200


@pytest.mark.parametrize(
    ("query", "rows"),
    [
        ("per_page=-1", 25),
        ("per_page=0", 1),
        ("per_page=999999", 30),
        ("per_page=\u00b2", 25),
        ("after=zzz", 25),
        ("before=" + "9" * 5000, 25),
        ("after=WyItbmFtZSIsImEiLDFd", 25),  # a key of the "-name" order, not of this one
        ("after=WyItY3JlYXRlZF9hdCIsMSwxXQ", 25),  # the right order, a number for a time
        ("after=%00&before=%ff", 25),
    ],
)
def test_paging_parameters_are_clamped(client, alice, vision, query, rows):
    spec = NodeSpecFactory()
    for _ in range(30):
        JobFactory(owner=alice, project=vision, specs=[spec])
    client.force_login(alice)
    response = client.get(f"/jobs/?{query}")
    assert response.status_code == 200
    page = response.context["page"]
    assert (page.start, len(page.rows)) == (0, rows)


@pytest.mark.parametrize("sort", ["--name", "name%00", "zzz", "-", "", "-priority-"])
def test_an_order_that_is_none_of_the_headers_is_the_newest_first(client, alice, sort):
    client.force_login(alice)
    response = client.get(f"/jobs/?sort={sort}")
    assert response.status_code == 200
    assert response.context["page"].order.name == "-created_at"


def test_htmx_search_returns_the_results_fragment(client, alice, vision):
    JobFactory(owner=alice, project=vision)
    client.force_login(alice)
    body = client.get("/jobs/?name=job", HTTP_HX_REQUEST="true").content.decode()
    assert body.lstrip().startswith('<div id="job-results">')


@pytest.mark.parametrize("user", ["alice", "bob"])
def test_query_count_does_not_grow_with_the_page(client, request, vision, user):
    alice = request.getfixturevalue("alice")
    actor = request.getfixturevalue(user)
    counts = []
    for total in (3, 30):
        Job.objects.all().delete()
        spec = NodeSpecFactory()
        algorithm = AlgorithmFactory(owner=alice, project=vision)
        for _ in range(total):
            JobFactory(
                owner=alice,
                project=vision,
                specs=[spec],
                algorithm=algorithm,
                others_access=Access.READ_ONLY,
            )
        client.force_login(actor)
        client.get("/jobs/")
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/jobs/")
        assert len(response.context["page"].rows) == min(total, 25)
        counts.append(len(queries))
    assert counts[0] == counts[1] <= 8, counts


def test_bulk_delete_confirms_and_skips_what_is_not_yours(client, alice, bob, vision):
    mine = JobFactory(owner=alice, project=vision, name="mine")
    theirs = JobFactory(owner=bob, project=vision, name="theirs", others_access=Access.READ_ONLY)
    client.force_login(alice)
    confirm = client.post("/jobs/delete/", {"ids": [mine.pk, theirs.pk]})
    assert confirm.status_code == 200
    body = confirm.content.decode()
    assert "Delete 1 job?" in body and "not yours to delete" in body
    assert Job.objects.count() == 2
    done = client.post("/jobs/delete/", {"ids": [mine.pk, theirs.pk], "confirm": "yes"})
    assert done.status_code == 302
    assert list(Job.objects.values_list("name", flat=True)) == ["theirs"]


def test_bulk_delete_with_nothing_ticked(client, alice):
    client.force_login(alice)
    response = client.post("/jobs/delete/", {"ids": ["x"]})
    assert response.status_code == 302


@pytest.mark.parametrize("ids", [["\u00b2"], ["\u0663"], ["9" * 40], ["-1"], ["1\x00"]])
def test_bulk_delete_ignores_what_is_not_an_id(client, alice, vision, ids):
    JobFactory(owner=alice, project=vision)
    client.force_login(alice)
    response = client.post("/jobs/delete/", {"ids": ids, "confirm": "yes"})
    assert response.status_code == 302 and Job.objects.count() == 1
