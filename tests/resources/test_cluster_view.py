from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.resources.factories import (
    AcceleratorModelFactory,
    AllocationFactory,
    NodeFactory,
    NodeSpecFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def a100():
    return AcceleratorModelFactory(name="A100")


def make_cluster(a100, nodes: int):
    for i in range(nodes):
        node = NodeFactory(gpus=True, accelerator_model=a100)
        AllocationFactory(node=node, slots=[0, 1], label=f"job-{i}")
    for boards in (1, 2, 4, 8):
        NodeSpecFactory(name=f"a100x{boards}", boards=Decimal(boards), accelerator_model=a100)


def test_anonymous_goes_to_login(client):
    assert client.get("/cluster/")["Location"].startswith("/login/")


def test_page_shows_nodes_usage_and_fits(client, alice, a100):
    make_cluster(a100, 3)
    client.force_login(alice)
    response = client.get("/cluster/")
    assert response.status_code == 200
    body = response.content.decode()
    assert 'data-testid="availability-table"' in body
    assert "0(0):job-0" in body
    assert "free now for a job of up to <strong>18</strong> nodes" in body  # a100x1: 6 × 3


def test_htmx_gets_only_the_fragment(client, alice, a100):
    make_cluster(a100, 1)
    client.force_login(alice)
    body = client.get("/cluster/", HTTP_HX_REQUEST="true").content.decode()
    assert body.lstrip().startswith('<div id="availability">')


def test_bad_filter_values_are_ignored(client, alice, a100):
    make_cluster(a100, 1)
    client.force_login(alice)
    assert client.get("/cluster/?spec=x&model=-1&page=zzz").status_code == 200


@pytest.mark.parametrize("nodes", [5, 60])
def test_query_count_does_not_grow_with_nodes(client, alice, a100, nodes):
    make_cluster(a100, nodes)
    client.force_login(alice)
    client.get("/cluster/")  # warm the session and permission caches
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/cluster/").status_code == 200
    # 11 for availability (the project's pools among them: each spec is answered per place
    # its jobs may run), 1 for the isolated nodes (and 1 more for their faults, if any).
    assert len(queries) <= 12, [q["sql"][:120] for q in queries]
    pytest.cluster_queries = getattr(pytest, "cluster_queries", {})
    pytest.cluster_queries[nodes] = len(queries)
    if len(pytest.cluster_queries) == 2:
        assert pytest.cluster_queries[5] == pytest.cluster_queries[60]
