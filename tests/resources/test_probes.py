"""A node's checks (SPEC F1, F2): this machine measured for real, injected faults laid over,
thresholds per pool, the demo's thresholds fitted to the machine."""

from __future__ import annotations

import pytest

from console import limits
from resources.demo import fit_prechecks
from resources.inventory import faults, probes
from resources.models import FaultKind
from tests.resources.factories import AcceleratorModelFactory, NodeFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def gpu_node():
    return NodeFactory(name="gpu-node", board_count=4, accelerator_model=AcceleratorModelFactory())


def results_of(node, boards=True) -> dict[str, probes.Result]:
    fact = probes.facts([node])[node.name]
    needed = probes.thresholds(node, limits.current())
    return {r.item: r for r in probes.precheck(node, fact, needed, boards=boards)}


def test_a_healthy_local_node_passes_every_precheck(gpu_node):
    found = results_of(gpu_node)
    assert list(found) == ["dns", "disk-size root", "disk-size shm", "disk-size cache",
                           "gpu-check"]  # fmt: skip
    assert all(r.ok for r in found.values()), found
    assert found["disk-size root"].value.endswith(" GB")


@pytest.mark.parametrize(
    ("kind", "detail", "item"),
    [
        (FaultKind.DNS, "", "dns"),
        (FaultKind.DISK, "shm", "disk-size shm"),
        (FaultKind.DISK, "cache", "disk-size cache"),
        (FaultKind.BOARD, "2", "gpu-check"),
    ],
)
def test_an_injected_fault_fails_exactly_its_check(gpu_node, kind, detail, item):
    faults.inject(gpu_node, kind, detail)
    found = results_of(gpu_node)
    failed = {name for name, r in found.items() if r.ok is False}
    assert failed == {item} and found[item].injected


def test_a_full_disk_without_detail_fills_all_three(gpu_node):
    faults.inject(gpu_node, FaultKind.DISK)
    found = results_of(gpu_node)
    assert {n for n, r in found.items() if r.ok is False} == {
        "disk-size root", "disk-size shm", "disk-size cache"
    }  # fmt: skip


def test_inspection_reads_heartbeat_nic_and_boards_and_clearing_heals(gpu_node):
    fault = faults.inject(gpu_node, FaultKind.HEARTBEAT)
    faults.inject(gpu_node, FaultKind.NIC)
    fact = probes.facts([gpu_node])[gpu_node.name]
    found = {r.item: r.ok for r in probes.inspect(gpu_node, fact, boards=True)}
    assert found == {"heartbeat": False, "nic": False, "gpu-check": True}
    faults.clear(fault)
    fact = probes.facts([gpu_node])[gpu_node.name]
    assert {r.item: r.ok for r in probes.inspect(gpu_node, fact, boards=True)}["heartbeat"]


def test_a_pools_threshold_wins_over_the_sites(admin):
    from tests.resources.factories import ResourcePoolFactory

    limits.save({"precheck_root_gb": 10**6}, admin)
    pool = ResourcePoolFactory(precheck_root_gb=0)
    pooled = NodeFactory(pool=pool)
    shared = NodeFactory()
    assert results_of(pooled, boards=False)["disk-size root"].ok
    assert results_of(shared, boards=False)["disk-size root"].ok is False
    assert results_of(shared, boards=False)["disk-size root"].needed == "1000000 GB"


def test_ulimits_are_checked_only_on_infiniband(gpu_node):
    assert "ulimit" not in results_of(gpu_node)
    gpu_node.labels = {probes.INFINIBAND_LABEL: "true"}
    gpu_node.save()
    found = results_of(gpu_node)["ulimit"]
    # This machine's limits are what they are; the check reports which are too low.
    assert found.ok == (found.value == "")


def test_a_cluster_node_reports_its_heartbeat_and_leaves_the_rest_unmeasured(gpu_node):
    from tests.resources.factories import ClusterFactory

    node = NodeFactory(cluster=ClusterFactory(), status="not_ready")
    fact = probes.facts([node])[node.name]
    assert not fact.heartbeat
    found = results_of(node, boards=False)
    assert {r.ok for r in found.values()} == {None}


def test_a_cluster_nodes_reported_problems_fail_precheck_and_inspection():
    from tests.resources.factories import ClusterFactory

    node = NodeFactory(cluster=ClusterFactory(), conditions=[
        ["KernelDeadlock", "DockerHung: task docker:7 blocked"],
        ["NetworkUnavailable", "NoRouteCreated"],
    ])  # fmt: skip
    fact = probes.facts([node])[node.name]
    inspected = {r.item: r for r in probes.inspect(node, fact, boards=False)}
    assert inspected["nic"].ok is False  # NetworkUnavailable is the NIC's answer
    assert inspected["condition KernelDeadlock"].ok is False
    assert inspected["condition KernelDeadlock"].value == "DockerHung: task docker:7 blocked"
    assert "condition NetworkUnavailable" not in inspected
    found = results_of(node, boards=False)
    assert found["condition KernelDeadlock"].ok is False
    assert {r.ok for item, r in found.items() if item != "condition KernelDeadlock"} == {None}


def test_the_demo_fits_its_thresholds_to_this_machine(admin, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        limits.save({"precheck_root_gb": 10**6, "precheck_shm_gb": 0}, admin)
    with django_capture_on_commit_callbacks(execute=True):
        fit_prechecks(lambda line: None, admin)
    fitted = limits.current()
    free = probes.facts_of_this_machine().free_gb
    assert fitted.precheck_root_gb < free["root"]
    assert fitted.precheck_shm_gb == 0  # an admin's value that fits is kept
