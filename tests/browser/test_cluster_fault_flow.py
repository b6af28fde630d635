"""Fault tolerance on a cluster, as an admin lives it (issue 28): the admin connects a cluster
through the settings page, a job with checkpoint resume runs there with its prechecks done
in the pods, a board fault injected on its node isolates the node (cordoned on the cluster,
saying why), the job resumes on the other node and succeeds, its events name each precheck
item, and "Return to service" uncordons the node; in English and Chinese."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs.faults import inspection
from jobs.models import Job, Phase
from jobs.tasks import admit
from resources.models import Cluster, Node
from tests.browser.conftest import logged_in, sized_tab
from tests.helpers import wait_until
from tests.jobs.execution_helpers import make_job
from tests.jobs.k8s_cluster import NODES, gpu_spec
from tests.resources.cluster_helpers import certificate, with_tls
from tests.resources.factories import ResourcePoolFactory
from tests.resources.k8s_fake import HAVE_CRDS, TOKEN, FakeKubernetes

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not HAVE_CRDS, reason="Volcano's CRDs are not beside the checkout"),
]
WORDS = {
    "en-US": {
        "precheck": "Precheck {item} passed",
        "resumes": "(resume 1 of 1)",
        "succeeded": "Succeeded",
    },
    "zh-CN": {
        "precheck": "预检 {item} 通过",
        "resumes": "（第 1 次续训，共 1 次）",
        "succeeded": "成功",
    },
}


@pytest.fixture
def api():
    with with_tls(FakeKubernetes(NODES)) as fake:
        fake.time_scale = 0.05
        yield fake


def connect(tab, api, pool) -> Cluster:
    """Settings → Clusters → new: the fake by URL, CA and token; test it; sync its nodes."""
    p = tab.page
    tab.goto("/settings/inventory/clusters/new/")
    p.fill("#id_name", "gpu-east")
    p.fill("#id_api_url", api.url)
    p.fill("#id_ca_certificate", certificate()[0])
    p.fill("#id_token", TOKEN)
    p.fill("#id_namespace", "ml")
    p.fill("#id_storage_host_path", "/srv/console-storage")
    p.select_option("#id_default_pool", label=pool.name)
    p.click("[data-testid=inventory-form] button[type=submit]")
    p.wait_for_url(re.compile(r"/settings/inventory/clusters/$"))
    cluster = Cluster.objects.get(name="gpu-east")
    tab.goto(f"/settings/inventory/clusters/{cluster.pk}/")
    p.click("[data-testid=test-connection]")
    expect(p.get_by_test_id("version")).to_be_visible()
    p.click("[data-testid=sync-nodes]")
    expect(p.get_by_test_id("sync-counts")).to_contain_text("2")
    return cluster


def node_of(api, name: str) -> dict:
    return next(n for n in api.nodes if n["metadata"]["name"] == name)


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_a_board_fault_on_a_cluster_node_is_survived_by_resuming_elsewhere(
    chromium, live_server, admin, alice, vision, api, celery_worker, beat, locale
):
    pool = ResourcePoolFactory(name="east-racks")
    pool.projects.add(vision)
    words = WORDS[locale]
    with sized_tab(chromium, live_server, locale, 1280) as tab:
        p = tab.page
        logged_in(tab, admin)
        connect(tab, api, pool)
        tab.shot(f"cluster-fault-connected-{tab.name}")

        job = make_job(alice, vision, gpu_spec(), pool=pool, resume_enabled=True,
                       max_resumes=1, graceful_shutdown_seconds=20)  # fmt: skip
        # The first attempt trains until stopped; the resumed one finishes.
        api.script("job-", logs=["epoch 1", "saved checkpoint"])
        api.script(f"job-{job.pk}-2", logs=["resumed from checkpoint", "done"], run_seconds=10)
        admit.delay()
        wait_until(lambda: Job.objects.get(pk=job.pk).phase == Phase.RUNNING, 30, 0.2)
        attempt = job.attempts.get()
        node = attempt.replicas[0]["node"]
        other = ({"gpu-01", "gpu-02"} - {node}).pop()

        tab.goto("/settings/faults/")
        p.select_option("#id_node", str(Node.objects.get(name=node).pk))
        p.select_option("#id_kind", "board")
        p.click("[data-testid=fault-form] button[type=submit]")
        expect(p.get_by_test_id("active-faults")).to_contain_text(node)
        wait_until(lambda: inspection.inspect() or job.attempts.filter(stop_cause="fault"), 20)

        def cordoned():
            return node_of(api, node)["spec"].get("unschedulable")

        wait_until(cordoned, 20, 0.2)  # the isolation, on the cluster too, saying why
        annotations = node_of(api, node)["metadata"]["annotations"]
        assert "boards not visible" in annotations["console.io/isolated"]
        assert annotations["console.io/isolated-by"] == "training-console"
        wait_until(lambda: Job.objects.get(pk=job.pk).phase == Phase.SUCCEEDED, 40, 0.3)
        second = job.attempts.get(number=2)
        assert second.replicas[0]["node"] == other

        tab.goto(f"/jobs/{job.pk}/")
        expect(p.get_by_test_id("job-phase")).to_contain_text(words["succeeded"])
        events = p.get_by_test_id("events")
        for item in ("dns", "disk-size root", "disk-size shm", "disk-size cache", "gpu-check"):
            expect(events).to_contain_text(words["precheck"].format(item=item))
        expect(events).to_contain_text(words["resumes"])
        tab.shot(f"cluster-fault-job-{tab.name}")

        tab.goto("/cluster/")
        isolated = p.get_by_test_id("isolated-nodes").locator(f"[data-node={node}]")
        expect(isolated).to_be_visible()
        tab.shot(f"cluster-fault-isolated-{tab.name}")
        isolated.locator("button[type=submit]").click()
        expect(p.get_by_test_id("isolated-nodes")).to_have_count(0)
        wait_until(lambda: not cordoned(), 20, 0.2)
        assert "console.io/isolated" not in (
            node_of(api, node)["metadata"].get("annotations") or {}
        )
    assert not tab.errors, tab.errors
