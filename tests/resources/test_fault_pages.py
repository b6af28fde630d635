"""The fault pages: injection under the settings (admins only), isolated nodes on /cluster/
and their return to service, the pool's precheck thresholds, and ``manage.py inject_fault``."""

import io
import re

import pytest
from django.core.management import CommandError, call_command
from django.utils import translation
from django.utils.translation import gettext_noop

from console.words import said
from resources.inventory import faults
from resources.models import FaultKind, Node, NodeFault
from tests.resources.factories import (
    AllocationFactory,
    NodeFactory,
    ResourcePoolFactory,
)

pytestmark = pytest.mark.django_db

PAGE = "/settings/faults/"
WHILE_RUNNING = gettext_noop("While running job %(job)s: %(what)s (%(check)s).")
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


@pytest.fixture
def node():
    return NodeFactory(name="gpu-7", gpus=True)  # 8 boards


@pytest.fixture
def as_admin(client, admin):
    client.force_login(admin)
    return client


@pytest.fixture
def no_runs(settings, tmp_path):
    # Kill and freeze look for the local backend's running jobs: none in an empty folder.
    settings.RUNS_DIR = tmp_path / "runs"


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def test_only_admins(client, alice, admin, node):
    fault = faults.inject(node, FaultKind.NIC)
    assert client.get(PAGE)["Location"].startswith("/login/")
    assert client.post(f"/settings/faults/{fault.pk}/clear/")["Location"].startswith("/login/")
    client.force_login(alice)
    assert client.get(PAGE).status_code == 403
    assert client.post(PAGE, {"node": node.pk, "kind": "nic"}).status_code == 403
    assert client.post(f"/settings/faults/{fault.pk}/clear/").status_code == 403
    assert client.post(f"/cluster/nodes/{node.pk}/return/").status_code == 403
    assert NodeFault.objects.active().count() == 1
    client.force_login(admin)
    assert client.get(PAGE).status_code == 200


def test_nodes_are_labelled_with_their_jobs(as_admin, node):
    AllocationFactory(node=node, label="resnet-ddp")
    AllocationFactory(node=node, label="bert-large")
    NodeFactory(name="idle-1")
    body = as_admin.get(PAGE).content.decode()
    assert "gpu-7 — bert-large, resnet-ddp" in body
    assert ">idle-1<" in body


@pytest.mark.parametrize(
    ("kind", "detail", "said"),
    [
        ("heartbeat", "", "Injected on gpu-7: Heartbeat lost."),
        ("nic", "", "Injected on gpu-7: Network interface down."),
        ("board", "3", "Injected on gpu-7: Board failed (3)."),
        ("board", "", "Injected on gpu-7: Board failed."),
        ("disk", "shm", "Injected on gpu-7: Disk full (shm)."),
        ("dns", "", "Injected on gpu-7: Names do not resolve."),
        (
            "condition",
            "ReadonlyFilesystem",
            "Injected on gpu-7: Node condition (ReadonlyFilesystem).",
        ),
        ("xid", "7:48", "Injected on gpu-7: Board XID error (7:48)."),
        ("kill", "", "No job process runs on gpu-7: nothing was killed."),
        ("freeze", "", "No job process runs on gpu-7: nothing was frozen."),
    ],
)
def test_inject_each_kind(as_admin, admin, node, no_runs, kind, detail, said):
    response = as_admin.post(PAGE, {"node": node.pk, "kind": kind, "detail": detail}, follow=True)
    assert response.redirect_chain[-1][0] == PAGE
    assert said in messages_of(response)[0]
    fault = NodeFault.objects.get()
    assert (fault.kind, fault.detail, fault.created_by) == (kind, detail, admin)
    body = response.content.decode()
    if kind in ("kill", "freeze"):
        assert fault.cleared_at is not None
        assert "no job process runs there" in body  # listed among the recent acts
    else:
        assert fault.cleared_at is None
        assert f'data-fault="{fault.pk}"' in body  # listed as in effect, with its button
        assert f"/settings/faults/{fault.pk}/clear/" in body


@pytest.mark.parametrize(
    ("kind", "detail", "field", "message"),
    [
        ("disk", "swap", "detail", "Pick the disk: root, shm or cache"),
        ("board", "8", "detail", "Give a board index from 0 to 7"),
        ("board", "x", "detail", "Give a board index from 0 to 7"),
        ("nic", "eth0", "detail", "This fault takes no detail."),
        ("condition", "kernel deadlock", "detail", "Give the condition's type as a cluster"),
        ("condition", "Ready", "detail", "Give the condition's type as a cluster"),
        ("xid", "0:13", "detail", "Give board:XID, e.g. 0:79, with a board from 0 to 7 and"),
        ("xid", "8:79", "detail", "Give board:XID, e.g. 0:79, with a board from 0 to 7 and"),
        ("kill", "1", "detail", "This fault takes no detail."),
    ],
)
def test_bad_details_are_field_errors_and_kept(as_admin, node, kind, detail, field, message):
    response = as_admin.post(PAGE, {"node": node.pk, "kind": kind, "detail": detail})
    assert response.status_code == 422
    form = response.context["form"]
    assert message in " ".join(form.errors[field])
    body = response.content.decode()
    assert f'value="{detail}"' in body  # what was typed is still there
    assert f'<option value="{kind}" selected>' in body
    assert not NodeFault.objects.exists()


@pytest.mark.parametrize(
    ("kind", "stored"), [("condition", "KernelDeadlock"), ("xid", "0:79"), ("xid", "92")]
)
def test_a_condition_or_xid_without_detail_is_the_commonest(as_admin, node, kind, stored):
    detail = "" if stored != "92" else stored
    as_admin.post(PAGE, {"node": node.pk, "kind": kind, "detail": detail})
    assert NodeFault.objects.get().detail == ("0:92" if detail else stored)


def test_a_board_fault_on_a_node_without_boards_is_said_at_the_kind(as_admin):
    cpu = NodeFactory(name="cpu-1")
    response = as_admin.post(PAGE, {"node": cpu.pk, "kind": "board", "detail": ""})
    assert response.status_code == 422
    assert response.context["form"].errors["kind"] == ["This node has no boards."]


def test_missing_and_hostile_values_are_field_errors(as_admin, node):
    for data in ({}, {"node": "x", "kind": "flood"}, {"node": "99999999", "kind": "nic"},
                 {"node": node.pk, "kind": "disk", "detail": "r" * 5000}):  # fmt: skip
        response = as_admin.post(PAGE, data)
        assert response.status_code == 422, data
        assert response.context["form"].errors
    assert not NodeFault.objects.exists()


def test_errors_in_chinese(as_admin, node):
    with translation.override("zh-hans"):
        response = as_admin.post(PAGE, {"node": node.pk, "kind": "disk", "detail": "swap"}, **ZH)
    body = response.content.decode()
    assert "故障注入" in body
    assert "Pick the disk" not in body
    assert "root、shm 或 cache" in " ".join(response.context["form"].errors["detail"])


def test_clear(as_admin, node):
    fault = faults.inject(node, FaultKind.DISK, "root")
    response = as_admin.post(f"/settings/faults/{fault.pk}/clear/", follow=True)
    assert "Cleared Disk full (root) on gpu-7" in messages_of(response)[0]
    fault.refresh_from_db()
    assert fault.cleared_at is not None
    assert "No injected fault is in effect." in response.content.decode()
    again = as_admin.post(f"/settings/faults/{fault.pk}/clear/", follow=True)
    assert "was already cleared" in messages_of(again)[0]
    assert as_admin.get(f"/settings/faults/{fault.pk}/clear/").status_code == 405
    assert as_admin.post("/settings/faults/999999/clear/").status_code == 404


# --- /cluster/: isolated nodes ---------------------------------------------------------


def isolate(node, reason="NIC down on gpu-7 (inspection)"):
    faults.isolate([node.name], reason)
    node.refresh_from_db()
    return node


def test_isolated_nodes_are_listed_with_why(client, alice, admin, node):
    faults.inject(node, FaultKind.NIC)
    isolate(node)
    client.force_login(alice)
    body = client.get("/cluster/").content.decode()
    assert 'data-testid="isolated-nodes"' in body
    assert "NIC down on gpu-7 (inspection)" in body
    assert "Network interface down" in body  # the injected fault still on it
    assert f"/cluster/nodes/{node.pk}/return/" not in body  # members see, admins act
    client.force_login(admin)
    assert f"/cluster/nodes/{node.pk}/return/" in client.get("/cluster/").content.decode()


def test_query_count_does_not_grow_with_isolated_nodes(client, admin):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(admin)
    counts = []
    for names in (["iso-0"], [f"iso-{i}" for i in range(1, 7)]):
        for name in names:
            node = NodeFactory(name=name)
            faults.inject(node, FaultKind.DNS)
        faults.isolate(names, "DNS down")
        client.get("/cluster/")
        with CaptureQueriesContext(connection) as queries:
            body = client.get("/cluster/").content.decode()
        counts.append(len(queries))
    assert body.count("DNS down") == 7 and body.count("Names do not resolve") == 7
    assert counts[0] == counts[1]


def test_no_section_without_isolated_nodes(client, alice, node):
    client.force_login(alice)
    assert 'data-testid="isolated-nodes"' not in client.get("/cluster/").content.decode()


def test_a_pool_the_project_may_not_use_is_not_shown(client, charlie, node):
    node.pool = ResourcePoolFactory()
    node.save()
    isolate(node)
    client.force_login(charlie)
    assert "gpu-7" not in client.get("/cluster/").content.decode()


def test_return_to_service(as_admin, node):
    faults.inject(node, FaultKind.NIC)
    faults.inject(node, FaultKind.DISK, "shm")
    isolate(node)
    assert not Node.objects.schedulable().filter(pk=node.pk).exists()
    response = as_admin.post(f"/cluster/nodes/{node.pk}/return/", follow=True)
    assert response.redirect_chain[-1][0] == "/cluster/"
    said = messages_of(response)[0]
    assert "gpu-7 is back in service" in said and "Cleared 2 injected faults" in said
    assert Node.objects.schedulable().filter(pk=node.pk).exists()
    assert not NodeFault.objects.active().exists()
    assert 'data-testid="isolated-nodes"' not in response.content.decode()
    again = as_admin.post(f"/cluster/nodes/{node.pk}/return/", follow=True)
    assert "gpu-7 is not isolated." in messages_of(again)


def test_return_to_service_in_chinese(as_admin, node):
    from jobs.faults.recovery import check_words

    # The reason as recovery words it: the check's words are translated inside it too.
    reason = said(WHILE_RUNNING, job="resnet-ddp", what=check_words("nic"), check="nic")
    isolate(node, reason)
    assert node.isolated_reason == "While running job resnet-ddp: network interface down (nic)."
    with translation.override("zh-hans"):
        page = as_admin.get("/cluster/", **ZH).content.decode()
        response = as_admin.post(f"/cluster/nodes/{node.pk}/return/", follow=True, **ZH)
    assert "已隔离的节点" in page and "恢复服务" in page
    assert "运行任务 resnet-ddp 时网卡故障（nic）。" in page
    assert "gpu-7 已恢复服务" in messages_of(response)[0]


# --- the pool form --------------------------------------------------------------------


def test_pool_precheck_thresholds(as_admin, admin, django_capture_on_commit_callbacks):
    from console import limits

    with django_capture_on_commit_callbacks(execute=True):  # the seed's defaults
        limits.save({"precheck_root_gb": 32, "precheck_shm_gb": 1, "precheck_cache_gb": 32}, admin)
    body = as_admin.get("/settings/inventory/pools/new/").content.decode()
    assert "Empty: the site&#x27;s limit (32 GB)." in body
    assert "Empty: the site&#x27;s limit (1 GB)." in body
    data = {"name": "fast", "description": "", "precheck_shm_gb": "8"}
    assert as_admin.post("/settings/inventory/pools/new/", data).status_code == 302
    from resources.models import ResourcePool

    pool = ResourcePool.objects.get(name="fast")
    assert (pool.precheck_root_gb, pool.precheck_shm_gb, pool.precheck_cache_gb) == (
        None, 8, None,
    )  # fmt: skip
    bad = as_admin.post("/settings/inventory/pools/new/", {"name": "x", "precheck_root_gb": "-1"})
    assert "precheck_root_gb" in bad.context["form"].errors


# --- manage.py inject_fault -----------------------------------------------------------


def run(*args) -> str:
    out = io.StringIO()
    call_command("inject_fault", *args, stdout=out)
    return out.getvalue()


def test_command_injects_and_clears(node, no_runs):
    assert "Injected on gpu-7: Disk full (cache)." in run("gpu-7", "disk", "--detail", "cache")
    assert "Injected on gpu-7: Heartbeat lost." in run("gpu-7", "heartbeat")
    assert NodeFault.objects.active().count() == 2
    assert "Cleared Disk full (cache) on gpu-7." in run("gpu-7", "disk", "--clear")
    assert list(NodeFault.objects.active().values_list("kind", flat=True)) == ["heartbeat"]
    assert "Nothing to clear on gpu-7: no disk fault is in effect." in run(
        "gpu-7", "disk", "--clear"
    )
    assert "nothing was killed" in run("gpu-7", "kill")


def test_command_errors(node):
    with pytest.raises(CommandError, match=re.escape("No node named 'gpu-9'. Nodes: gpu-7.")):
        run("gpu-9", "nic")
    with pytest.raises(CommandError, match="invalid choice: 'flood'"):
        run("gpu-7", "flood")
    with pytest.raises(CommandError, match="Give a board index from 0 to 7"):
        run("gpu-7", "board", "--detail", "12")
    assert not NodeFault.objects.exists()
