"""The cluster availability page and the inventory settings, as people use them."""

import io
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from resources.models import Allocation, Node, NodeSpec

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(settings):
    settings.DEMO_MODE = True
    call_command("seed_demo", stdout=io.StringIO())
    node = Node.objects.get(name="local-a")
    Allocation.objects.create(
        node=node, holder_id=1, label="resnet-train", replica="worker-0",
        cpu_millicores=4000, memory_mib=8192, slots=[0, 1],
    )  # fmt: skip
    Allocation.objects.create(
        node=Node.objects.get(name="local-c"), holder_id=2, label="notebook-7",
        cpu_millicores=1000, memory_mib=2048, slots=[1],
    )  # fmt: skip


def log_in(page, username):
    page.log_in(username, "demo")
    page.page.wait_for_url(re.compile(r"/$"))


def test_cluster_page_for_a_member(page, demo):
    log_in(page, "alice")
    page.goto("/cluster/")
    table = page.page.locator("[data-testid=availability-table]")
    expect(table.locator("tr[data-node=local-a]")).to_be_visible()
    # alice's project may use the vision-reserved pool, so local-c is listed.
    expect(table.locator("tr[data-node=local-c]")).to_be_visible()
    assert "0(0):resnet-train" in table.locator("tr[data-node=local-a]").inner_text()
    page.shot("cluster")
    spec = NodeSpec.objects.get(name="gpu-4")
    page.page.check(f"#spec-{spec.pk}")
    page.page.wait_for_url(re.compile(r"spec="))
    page.page.wait_for_selector("tr[data-node=local-a][data-status=tight]")
    page.shot("cluster-gpu-4")


def test_outsider_does_not_see_the_reserved_pool(page, demo):
    log_in(page, "charlie")
    page.goto("/cluster/")
    expect(page.page.locator("tr[data-node=local-a]")).to_be_visible()
    assert page.page.locator("tr[data-node=local-c]").count() == 0


def test_admin_adds_a_spec_with_a_mistake(page, demo):
    log_in(page, "admin")
    page.goto("/settings/inventory/specs/")
    page.shot("inventory-specs")
    page.page.click("text=Add")
    page.page.fill("#id_name", "gpu-3q")
    page.page.fill("#id_cpu", "2")
    page.page.fill("#id_memory_gib", "8")
    page.page.select_option("#id_accelerator_model", label="Demo-GPU")
    page.page.fill("#id_boards", "0.3")
    page.page.click("main button[type=submit]")
    expect(page.page.locator("#id_boards.is-invalid")).to_be_visible()
    assert page.page.input_value("#id_name") == "gpu-3q"
    page.errors.clear()
    page.shot("inventory-spec-error")
    page.page.fill("#id_boards", "0.25")
    page.page.click("main button[type=submit]")
    expect(page.page.get_by_text("Saved gpu-3q.")).to_be_visible()


def test_retiring_a_busy_node_is_refused(page, demo):
    log_in(page, "admin")
    page.goto("/settings/inventory/nodes/")
    page.shot("inventory-nodes")
    row = page.page.locator("tr", has_text="local-a")
    row.get_by_role("link", name="Retire").click()
    in_use = page.page.locator("[data-testid=in-use]").inner_text()
    assert "resnet-train" in in_use and "resnet-ddp" in in_use
    page.shot("inventory-retire-refused")


def test_admin_points_an_image_at_a_local_runtime(page, demo, tmp_path):
    runtime = tmp_path / "py311"
    (runtime / "bin").mkdir(parents=True)
    (runtime / "bin" / "python").write_text("#!/bin/sh\n")
    log_in(page, "admin")
    page.goto("/settings/inventory/images/")
    page.page.locator("tr", has_text="pytorch-2").locator("text=Edit").click()
    page.page.fill("#id_local_runtime", str(tmp_path / "nowhere"))
    page.page.click("main button[type=submit]")
    expect(page.page.locator("#id_local_runtime.is-invalid")).to_be_visible()
    page.errors.clear()
    page.shot("inventory-image-runtime-error")
    page.page.fill("#id_local_runtime", str(runtime) + "/")
    page.page.click("main button[type=submit]")
    expect(page.page.get_by_text("Saved pytorch-2.")).to_be_visible()
    expect(page.page.locator("tr", has_text="pytorch-2").get_by_text(str(runtime))).to_be_visible()
    page.shot("inventory-images")
