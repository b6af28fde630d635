"""A cluster's node isolated for a problem the cluster reports of it (SPEC F2 on
Kubernetes): /cluster/ shows the condition beside the isolation, with the cluster's words on
hover, in English and Chinese."""

from __future__ import annotations

import pytest
from django.utils.translation import gettext_noop
from playwright.sync_api import expect

from console.words import said
from jobs.faults.diagnosis import check_words
from resources.inventory import faults
from tests.browser.conftest import logged_in, sized_tab
from tests.resources.factories import ClusterFactory, NodeFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(("locale", "reports"), [("en-US", "The cluster reports this of the node"),
                                                  ("zh-CN", "集群报告该节点")])  # fmt: skip
def test_an_isolated_nodes_reported_problem_is_shown(chromium, live_server, admin, locale, reports):
    NodeFactory(name="gpu-07", cluster=ClusterFactory(), conditions=[
        ["KernelDeadlock", "DockerHung: task docker:7 blocked for more than 300 seconds."],
    ])  # fmt: skip
    check = "condition KernelDeadlock"
    why = said(gettext_noop("While running job %(job)s: %(what)s (%(check)s)."),
               job="resnet", what=check_words(check), check=check)  # fmt: skip
    faults.isolate(["gpu-07"], why)
    with sized_tab(chromium, live_server, locale, 1280) as tab:
        logged_in(tab, admin)
        tab.goto("/cluster/")
        item = tab.page.get_by_test_id("isolated-nodes").locator("[data-node=gpu-07]")
        badge = item.get_by_test_id("node-condition")
        expect(badge).to_have_text("KernelDeadlock")
        title = badge.get_attribute("title")
        assert reports in title and "DockerHung: task docker:7 blocked" in title
        words = {"en-US": "the node condition", "zh-CN": "出现节点状况"}
        expect(item).to_contain_text(f"{words[locale]} KernelDeadlock")
        tab.shot(f"node-condition-{tab.name}")


INJECTED = {
    "en-US": "Node condition (ReadonlyFilesystem)",
    "zh-CN": "节点状况（ReadonlyFilesystem）",
}


@pytest.mark.parametrize(("locale", "injected"), INJECTED.items())
def test_a_condition_is_injected_on_a_cluster_node_from_the_page(
    chromium, live_server, admin, locale, injected
):
    """A drill on a cluster's node (issue 28): the injection page takes a condition's type and
    an XID, refuses one that is not a hardware XID under the field, and lists what is in
    effect."""
    node = NodeFactory(name="gpu-07", cluster=ClusterFactory(), gpus=True)
    with sized_tab(chromium, live_server, locale, 1280) as tab:
        logged_in(tab, admin)
        tab.goto("/settings/faults/")
        p = tab.page
        submit = p.locator("[data-testid=fault-form] button[type=submit]")
        p.select_option("#id_node", str(node.pk))
        p.select_option("#id_kind", "xid")
        p.fill("#id_detail", "0:13")  # a program's own XID, not the board's fault
        submit.click()
        expect(p.locator("#id_detail.is-invalid")).to_be_visible()
        expect(p.locator("#id_detail")).to_have_value("0:13")
        tab.errors.clear()  # the 422 answer is logged by the browser
        tab.shot(f"inject-xid-error-{tab.name}")
        p.select_option("#id_kind", "condition")
        p.fill("#id_detail", "ReadonlyFilesystem")
        submit.click()
        active = p.get_by_test_id("active-faults")
        expect(active).to_contain_text("gpu-07")
        expect(active).to_contain_text(injected)
        tab.shot(f"inject-condition-{tab.name}")
