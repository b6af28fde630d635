"""The job form's availability panel (SPEC J25): for the form's own choices, on the form.

And the demo's gpu-half, which /cluster/ used to call free where the form said it could
never start: one answer everywhere.
"""

from __future__ import annotations

import io
import re
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.admission import prediction
from jobs.admission.db import run_pass
from resources.models import Node, NodeSpec, ResourcePool
from tests.jobs.factories import JobFactory
from tests.resources.factories import AllocationFactory, NodeFactory, NodeSpecFactory

pytestmark = pytest.mark.django_db

URL = "/jobs/new/availability/"


def panel(client, job_post, **overrides) -> str:
    response = client.post(URL, {**job_post(**overrides), "availability": "1"})
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    return response.content.decode()


def places(html: str) -> dict[str, str]:
    return dict(re.findall(r'data-place="([^"]+)"\s+data-state="(\w+)"', html))


def nodes(html: str) -> list[str]:
    return re.findall(r'<tr data-node="([^"]+)"', html)


class TestPanel:
    def test_anonymous_goes_to_login_and_get_is_refused(self, client, alice):
        assert client.post(URL)["Location"].startswith("/login/")
        client.force_login(alice)
        assert client.get(URL).status_code == 405

    def test_closed_it_is_the_button(self, client, alice, job_post):
        client.force_login(alice)
        html = client.post(URL, job_post()).content.decode()
        assert 'data-testid="open-availability"' in html
        assert 'data-testid="form-availability"' not in html

    def test_without_a_spec_it_asks_for_one(self, client, alice, job_post):
        client.force_login(alice)
        html = panel(client, job_post, specs=None)
        assert 'data-testid="availability-empty"' in html and "<table" not in html

    def test_the_chosen_specs_on_the_nodes_the_job_may_use(
        self, client, alice, job_post, inventory
    ):
        client.force_login(alice)
        html = panel(client, job_post, specs=[inventory["gpu"].pk])
        # No pool chosen: the shared nodes only, answered for a100x1, not another spec.
        assert "the shared nodes" in html
        assert sorted(nodes(html)) == ["cpu-node", "gpu-node"]
        assert re.findall(r'data-spec="([^"]+)"', html) == ["a100x1"]
        assert places(html) == {"shared": "now"}
        assert 'data-node="gpu-node" data-status="idle"' in html

    def test_a_pool_a_driver_and_pinned_nodes_narrow_it(self, client, alice, job_post, inventory):
        client.force_login(alice)
        gpu = inventory["gpu"].pk
        in_pool = panel(client, job_post, specs=[gpu], pool=inventory["pool"].pk)
        assert nodes(in_pool) == ["pool-node"] and places(in_pool) == {"vision-pool": "now"}
        with_driver = panel(client, job_post, specs=[gpu], driver_version=inventory["driver"].pk)
        assert nodes(with_driver) == ["gpu-node"] and "driver 535" in with_driver
        pinned = panel(client, job_post, specs=[gpu], node_names=["pool-node"])
        assert nodes(pinned) == ["pool-node"] and places(pinned) == {"pinned": "now"}

    def test_what_needs_more_than_there_is_says_so_and_where_else(
        self, client, alice, job_post, inventory
    ):
        NodeFactory(name="pool-node-2", board_count=8, accelerator_model=inventory["a100"],
                    pool=inventory["pool"])  # fmt: skip
        a100 = inventory["a100"]
        whole = NodeSpecFactory(name="a100x8", boards=Decimal(8), accelerator_model=a100,
                                cpu_millicores=1000, memory_mib=1024)  # fmt: skip
        client.force_login(alice)
        two = {"specs": [whole.pk], "mode": "pytorch", "node_count": "2"}
        html = " ".join(panel(client, job_post, **two).split())
        assert places(html) == {"shared": "never"}
        assert "needs 2 nodes at once; only 1 can ever take it" in html
        assert "It could start in pool vision-pool: choose it as the dedicated pool." in html
        # The prediction beside Create says the same, from the same function.
        said = " ".join(client.post("/jobs/new/predict/", job_post(**two)).content.decode().split())
        assert 'data-state="never"' in said
        assert "It could start in pool vision-pool: choose it as the dedicated pool." in said

    def test_busy_nodes_are_tight_with_the_reason_and_usage(
        self, client, alice, job_post, inventory, vision
    ):
        gpu_node = inventory["gpu"].accelerator_model.nodes.get(name="gpu-node")
        AllocationFactory(node=gpu_node, label="hog", slots=list(range(8)), cpu_millicores=1000)
        client.force_login(alice)
        html = panel(client, job_post, specs=[inventory["gpu"].pk])
        assert 'data-node="gpu-node" data-status="tight"' in html
        assert "a100x1: A100: needs 1, 0 free" in html and "7(0):hog" in html
        assert places(html) == {"shared": "queue"}

    def test_it_never_leads_away_from_the_form(self, client, alice, job_post, inventory):
        for i in range(12):
            NodeFactory(name=f"extra-{i:02d}")
        client.force_login(alice)
        html = panel(client, job_post)
        assert "href=" not in html and "hx-push-url" not in html and "<form" not in html
        assert "hx-get" not in html  # every request of the panel posts the form it is in
        assert len(nodes(html)) == 10 and 'data-testid="more-nodes"' in html
        more = client.post(URL, {**job_post(), "availability": "1", "availability_rows": "200"})
        assert len(nodes(more.content.decode())) == 14

    @pytest.mark.parametrize("rows", ["\u00b2", "-1", "9" * 5000, "a\x00b", ""])
    def test_hostile_values_are_ignored(self, client, alice, job_post, rows):
        client.force_login(alice)
        spoilt = {"availability_rows": rows, "node_count": "9" * 30, "specs": ["\u00b2"]}
        assert client.post(URL, {**job_post(), "availability": "1", **spoilt}).status_code == 200

    def test_query_count_does_not_grow_with_nodes(self, client, alice, job_post, inventory):
        client.force_login(alice)
        panel(client, job_post)  # warm the session and the limits' cache
        counts = []
        for extra in (0, 30):
            for i in range(extra):
                node = NodeFactory(name=f"more-{i:02d}")
                AllocationFactory(node=node, label=f"j{i}")
            # Both counts with the queue's plan made afresh: whether the last one still holds
            # depends on other sessions' open transactions (its snapshot check), not on nodes.
            prediction.forget_schedule()
            with CaptureQueriesContext(connection) as queries:
                panel(client, job_post, availability_rows="200")
            counts.append(len(queries))
        assert counts[0] == counts[1], counts

    def test_the_form_keeps_it_open_across_refreshes(self, client, alice, job_post):
        client.force_login(alice)
        body = client.post("/jobs/new/refresh/", {**job_post(), "availability": "1"})
        html = body.content.decode()
        assert 'data-testid="form-availability"' in html and 'hx-trigger="load"' in html
        closed = client.post("/jobs/new/refresh/", job_post()).content.decode()
        assert 'data-testid="open-availability"' in closed

    def test_in_chinese(self, client, alice, job_post, inventory):
        client.force_login(alice)
        client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
        html = panel(client, job_post, specs=[inventory["gpu"].pk])
        assert "适用算力规格" in html and "Specs that fit" not in html
        assert 'data-label="适用算力规格"' in html  # the narrow layout's labels too


class TestGpuHalfOnTheDemo:
    """The issue's case: gpu-half only fits on the demo's sliced node, local-c, which is in
    the vision-reserved pool. Every page now says so alike."""

    @pytest.fixture
    def demo(self, settings):
        settings.DEMO_MODE = True
        call_command("seed_demo", stdout=io.StringIO())
        return NodeSpec.objects.get(name="gpu-half")

    def form(self, half, **extra):
        return {"name": "half", "mode": "single", "specs": [half.pk], "node_count": "1",
                "duration_hours": "24", "priority": "0", **extra}  # fmt: skip

    @pytest.mark.django_db(transaction=True)
    def test_same_answer_on_the_form_the_panel_cluster_and_admission(self, client, demo):
        from django.contrib.auth import get_user_model

        alice = get_user_model().objects.get(username="alice")
        pool = ResourcePool.objects.get(name="vision-reserved")
        client.force_login(alice)
        # Without a dedicated pool: never, and where it could start instead.
        said = " ".join(client.post("/jobs/new/predict/", self.form(demo)).content.decode().split())
        assert 'data-state="never"' in said
        assert "choose it as the dedicated pool" in said and "vision-reserved" in said
        html = client.post(URL, {**self.form(demo), "availability": "1"}).content.decode()
        assert places(html) == {"shared": "never"}
        cluster = client.get(f"/cluster/?spec={demo.pk}").content.decode()
        assert places(cluster) == {"shared": "never", "vision-reserved": "now"}
        # In the pool: it starts now, on the form, in the panel and in admission.
        in_pool = self.form(demo, pool=pool.pk)
        said = client.post("/jobs/new/predict/", in_pool).content.decode()
        assert 'data-state="now"' in said
        html = client.post(URL, {**in_pool, "availability": "1"}).content.decode()
        # The pool's two nodes are listed; only local-c is sliced.
        assert places(html) == {"vision-reserved": "now"}
        assert nodes(html) == ["local-c", "local-f"]
        job = JobFactory(owner=alice, project=alice.memberships.get().project, specs=[demo],
                         pool=pool)  # fmt: skip
        assert job.pk in run_pass().admitted

    def test_free_now_but_behind_the_queue_reads_as_the_prediction(self, client, demo):
        from django.contrib.auth import get_user_model

        client.force_login(get_user_model().objects.get(username="alice"))
        gpu1 = self.form(NodeSpec.objects.get(name="gpu-1"))
        said = client.post("/jobs/new/predict/", gpu1).content.decode()
        html = " ".join(client.post(URL, {**gpu1, "availability": "1"}).content.decode().split())
        # Boards are free on the shared nodes, but sweep-large waits for them first.
        assert places(html) == {"shared": "now"} and 'data-state="queue"' in said
        assert 'data-testid="submitted-now" data-state="queue"' in html
        assert "reserved for jobs ahead of it" in html

    def test_charlie_and_the_admin_may_not_use_the_pool(self, client, demo):
        from django.contrib.auth import get_user_model

        for name in ("charlie", "admin"):
            user = get_user_model().objects.get(username=name)
            client.force_login(user)
            cluster = client.get(f"/cluster/?spec={demo.pk}").content.decode()
            assert places(cluster) == {"shared": "never"}, name
            said = client.post("/jobs/new/predict/", self.form(demo)).content.decode()
            assert 'data-state="never"' in said and "dedicated pool" not in said


class TestResumeInTheDemosPool:
    """Checkpoint resume moves a job to another node of its dedicated pool after a fault:
    the demo's pool has two, and the form says before Create when the pool would have no
    room left for the job after one node fails."""

    @pytest.fixture
    def demo(self, settings):
        settings.DEMO_MODE = True
        call_command("seed_demo", stdout=io.StringIO())
        return ResourcePool.objects.get(name="vision-reserved")

    def said(self, client, pool, spec: str, nodes: int) -> str:
        from django.contrib.auth import get_user_model

        client.force_login(get_user_model().objects.get(username="alice"))
        form = {"name": "resumer", "mode": "pytorch", "node_count": str(nodes),
                "specs": [NodeSpec.objects.get(name=spec).pk], "pool": pool.pk,
                "resume_enabled": "on", "max_resumes": "2", "duration_hours": "24",
                "priority": "0"}  # fmt: skip
        return " ".join(client.post("/jobs/new/predict/", form).content.decode().split())

    def test_two_nodes_of_one_board_can_move_after_a_fault(self, client, demo):
        assert sorted(demo.nodes.values_list("name", flat=True)) == ["local-c", "local-f"]
        said = self.said(client, demo, "gpu-1", 2)
        assert 'data-state="now"' in said and "resume-caveat" not in said

    def test_a_job_that_needs_the_whole_pool_is_warned(self, client, demo):
        said = self.said(client, demo, "gpu-2", 2)
        assert 'data-testid="resume-caveat"' in said
        assert "If local-c fails, pool vision-reserved has no other node with room" in said

    def test_a_one_node_pool_is_warned_in_chinese(self, client, demo):
        Node.objects.filter(name="local-f").update(pool=None)
        said = self.said(client, demo, "gpu-1", 1).replace("Checkpoint", "")
        assert 'data-testid="resume-caveat"' in said
        client.cookies["django_language"] = "zh-hans"
        said = self.said(client, demo, "gpu-1", 1)
        assert "断点续训" in said and "local-c" in said


def test_a_spec_that_fits_nowhere_reads_the_same_on_cluster(client, alice, inventory):
    huge = NodeSpecFactory(name="huge", boards=Decimal(16), accelerator_model=inventory["a100"])
    client.force_login(alice)
    html = " ".join(client.get(f"/cluster/?spec={huge.pk}").content.decode().split())
    assert places(html) == {"shared": "never", "vision-pool": "never"}
    assert "needs 16 boards of A100 on one node; the most any allowed node has is 8" in html
