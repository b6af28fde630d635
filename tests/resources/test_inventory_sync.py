import pytest

from resources.backends.base import NodeInfo
from resources.inventory.sync import sync
from resources.models import AcceleratorModel, DriverVersion, Node
from tests.resources.factories import AllocationFactory, NodeFactory, ResourcePoolFactory

pytestmark = pytest.mark.django_db


def gpu(name="g1", **kwargs) -> NodeInfo:
    values = {
        "name": name, "cpu_millicores": 32000, "memory_mib": 256 * 1024, "os_image": "Ubuntu 22.04",
        "kernel": "5.15", "accelerator_model": "A100", "accelerator_kind": "GPU",
        "accelerator_memory_gib": 80, "board_count": 8, "driver_version": "535.1",
        "labels": {"zone": "a"},
    }  # fmt: skip
    values.update(kwargs)
    return NodeInfo(**values)


def test_first_sync_creates_nodes_models_and_drivers():
    report = sync("kubernetes", [gpu("g1"), gpu("g2"), NodeInfo("c1", 8000, 16384)])
    assert sorted(report.created) == ["c1", "g1", "g2"]
    g1 = Node.objects.get(name="g1")
    assert (g1.board_count, g1.accelerator_model.name, g1.driver_version.version) == (
        8, "A100", "535.1",
    )  # fmt: skip
    assert g1.source == "kubernetes" and g1.last_heartbeat
    assert AcceleratorModel.objects.get().memory_gib == 80
    assert DriverVersion.objects.count() == 1
    assert Node.objects.get(name="c1").accelerator_model is None


def test_sync_is_idempotent():
    infos = [gpu("g1"), gpu("g2")]
    sync("kubernetes", infos)
    report = sync("kubernetes", infos)
    assert not report.changed
    assert sorted(report.unchanged) == ["g1", "g2"]


def test_hardware_changes_are_applied_but_console_choices_kept():
    sync("kubernetes", [gpu("g1")])
    pool = ResourcePoolFactory()
    Node.objects.filter(name="g1").update(pool=pool, cordoned=True)
    report = sync("kubernetes", [gpu("g1", board_count=4, ready=False)])
    assert report.updated == ["g1"]
    node = Node.objects.get(name="g1")
    assert (node.board_count, node.status, node.pool, node.cordoned) == (
        4, Node.Status.NOT_READY, pool, True,
    )  # fmt: skip


def test_vanished_node_with_jobs_is_kept_as_not_ready_others_forgotten():
    sync("kubernetes", [gpu("busy"), gpu("idle")])
    AllocationFactory(node=Node.objects.get(name="busy"))
    report = sync("kubernetes", [])
    assert report.marked_not_ready == ["busy"]
    assert report.removed == ["idle"]
    assert Node.objects.get(name="busy").status == Node.Status.NOT_READY
    assert not sync("kubernetes", []).changed


def test_other_sources_and_manual_nodes_are_left_alone():
    manual = NodeFactory(name="g1", cpu_millicores=1000)
    sync("kubernetes", [gpu("g1")])
    sync("kubernetes", [])
    manual.refresh_from_db()
    assert (manual.source, manual.cpu_millicores) == ("manual", 1000)


def test_pool_label_places_new_nodes():
    pool = ResourcePoolFactory(name="team-a")
    sync("kubernetes", [gpu("g1", labels={"console.io/pool": "team-a"})], "console.io/pool")
    assert Node.objects.get(name="g1").pool == pool


def test_sync_command_and_task_use_the_local_backend(settings):
    from django.core.management import call_command

    settings.EXECUTION_BACKEND = "local"
    settings.LOCAL_NODES = "x1:4:8:2xDemo-GPU,x2:2:4"
    call_command("sync_inventory", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert set(Node.objects.values_list("name", flat=True)) == {"x1", "x2"}
