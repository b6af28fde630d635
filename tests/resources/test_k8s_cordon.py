"""Isolation the cluster honours (SPEC F3 on Kubernetes, issue 28): a node the console
isolates after a fault is cordoned on the cluster with an annotation saying why and by
whom; "Return to service" uncordons it; an admin's own cordon is never undone; without
``patch nodes`` nothing is patched, the console still keeps its jobs off the node, and the
connection test says what is lost. Against the fake API server (a JSON merge patch, as a
real one takes it)."""

from __future__ import annotations

import pytest

from resources.backends.kubernetes import cordon
from resources.inventory import faults
from resources.models import Node
from resources.tasks import sync_cluster
from tests.helpers import wait_until
from tests.resources.k8s_fake import HAVE_CRDS

pytestmark = pytest.mark.skipif(
    not HAVE_CRDS, reason="Volcano's CRDs are not beside the checkout (shared/k8s/crds)"
)


def on_cluster(fake, name: str) -> dict:
    [found] = [n for n in fake.nodes if n["metadata"]["name"] == name]
    return found


def cordoned(fake, name: str) -> bool:
    return on_cluster(fake, name).get("spec", {}).get("unschedulable") is True


def test_an_isolated_node_is_cordoned_with_why_and_returned_to_service_uncordoned(
    cluster, fake, celery_worker
):
    faults.isolate(["gpu-01"], "Precheck gpu-check failed on gpu-01: 3 of 4 boards visible.")
    # The isolation asks for the cluster's sync at once (a task of the worker).
    wait_until(lambda: cordoned(fake, "gpu-01"), 20, 0.1)
    annotations = on_cluster(fake, "gpu-01")["metadata"]["annotations"]
    assert annotations[cordon.ANNOTATION] == (
        "Precheck gpu-check failed on gpu-01: 3 of 4 boards visible."
    )
    assert annotations[cordon.BY] == "training-console" and annotations[cordon.AT].endswith("Z")
    assert not cordoned(fake, "gpu-02")
    # Its own cordon is not "not ready": the node is isolated, and says so, in the console.
    sync_cluster(cluster)
    node = Node.objects.get(name="gpu-01")
    assert node.status == Node.Status.READY and node.isolated_at is not None

    faults.return_to_service(node)
    wait_until(lambda: not cordoned(fake, "gpu-01"), 20, 0.1)
    assert cordon.ANNOTATION not in on_cluster(fake, "gpu-01")["metadata"].get("annotations", {})
    patches = [path for method, path in fake.calls if method == "PATCH"]
    assert patches == ["/api/v1/nodes/gpu-01", "/api/v1/nodes/gpu-01"]  # once each way


def test_a_cordon_missed_is_made_at_the_next_sync_and_only_once(cluster, fake):
    fake.down = True  # the cluster away when the node is isolated
    faults.isolate(["gpu-02"], "node-lost")
    fake.down = False
    assert not cordoned(fake, "gpu-02")
    sync_cluster(cluster)
    assert cordoned(fake, "gpu-02")
    sync_cluster(cluster)
    assert [m for m, path in fake.calls if m == "PATCH" and path.endswith("gpu-02")] == ["PATCH"]


def test_an_admins_own_cordon_is_left_alone(cluster, fake):
    on_cluster(fake, "gpu-01").setdefault("spec", {})["unschedulable"] = True  # kubectl cordon
    sync_cluster(cluster)
    assert Node.objects.get(name="gpu-01").status == Node.Status.NOT_READY  # the cluster says so
    faults.return_to_service(Node.objects.get(name="gpu-01"))
    sync_cluster(cluster)
    assert cordoned(fake, "gpu-01")
    assert not [path for method, path in fake.calls if method == "PATCH"]


def test_without_patch_nodes_nothing_is_patched_and_the_test_says_what_is_lost(
    cluster, fake, admin, client
):
    fake.forbidden.add(("patch", "", "nodes"))
    faults.isolate(["gpu-01", "gpu-02"], "node-lost")
    sync_cluster(cluster)  # refused once, logged; the sync itself goes on
    assert not cordoned(fake, "gpu-01") and not cordoned(fake, "gpu-02")
    assert [m for m, _ in fake.calls if m == "PATCH"] == ["PATCH"]  # one refusal a sync
    assert Node.objects.filter(isolated_at__isnull=False).count() == 2
    check = cluster_check(cluster)
    assert "patch nodes" in check.optional_missing and check.ok


def cluster_check(cluster):
    from resources.clusters import backend_for

    return backend_for(cluster).check()


def test_a_patch_in_plain_json_is_refused_as_a_cluster_would(fake, cluster):
    from resources.backends.kubernetes.api import ApiAnswer
    from resources.clusters import backend_for

    api = backend_for(cluster).api
    with pytest.raises(ApiAnswer) as refused:
        api.request("PATCH", cordon.path("gpu-01"), "cordon", body={"spec": {}})
    assert refused.value.status == 415
