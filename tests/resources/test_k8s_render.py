"""The Kubernetes renderer (SPEC E2): every mode and size of launch plan becomes a Volcano Job
that the published CRD schema accepts, strictly (no unknown field), and that keeps the plan:
one task per replica, host names, environment, files, gang, nodes, resources, mounts,
identity and graceful time."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.launch import MODES, LaunchRequest, plan, port_for
from resources.backends.base import NodeChecks, RunAs
from resources.backends.kubernetes import render
from resources.backends.kubernetes.schema import crd_schema, problems
from tests.jobs.test_launch_properties import BOARDS, COMMANDS
from tests.resources.test_local_runner_helpers import workload_from_plan

CRDS = Path(__file__).resolve().parents[2].parent / "shared" / "k8s" / "crds"
pytestmark = pytest.mark.skipif(
    not (CRDS / "batch.volcano.sh_jobs.yaml").exists(),
    reason="Volcano's CRDs are not beside the checkout (shared/k8s/crds)",
)
STORAGE = "/data/storage"
TARGET = render.ClusterTarget(
    namespace="training", queue="vision", storage_root=STORAGE, storage_claim="console-storage"
)
IDENTITY = RunAs(uid=200007, gid=200007, groups=(300002,), name="console-u7")


def job_schema():
    crd = yaml.safe_load((CRDS / "batch.volcano.sh_jobs.yaml").read_text())
    return crd_schema(crd, "v1alpha1")


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    read_only: bool


MOUNTS = (
    Mount(f"{STORAGE}/algorithms/resnet", "/workspace/algorithm", True),
    Mount(f"{STORAGE}/users/alice/outputs/resnet-7", "/workspace/outputs", False),
)


@st.composite
def workloads(draw):
    mode = draw(st.sampled_from(MODES))
    number = draw(st.integers(1, 10**6))
    name = f"job-{number}-1"
    request = LaunchRequest(
        job_name=draw(st.from_regex(r"[a-z]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)),
        mode=mode,
        command=draw(st.sampled_from(COMMANDS)),
        cpu_millicores=draw(st.integers(1, 64_000)),
        memory_mib=draw(st.integers(64, 512_000)),
        port=port_for(number),
        node_count=1 if mode == "single" else draw(st.integers(1, 8)),
        boards=draw(st.sampled_from(BOARDS)),
        ps_count=draw(st.integers(0, 3)) if mode == "tensorflow" else 0,
        mounts=MOUNTS,
        subdomain=name,
    )
    workload = workload_from_plan(plan(request), name, graceful_seconds=draw(st.integers(0, 600)))
    nodes = [replace(r, node=f"gpu-node-{i}") for i, r in enumerate(workload.replicas)]
    checks = [
        NodeChecks(node=r.node, root_gb=draw(st.integers(0, 500)),
                   infiniband=draw(st.booleans()))
        for r in nodes
    ]  # fmt: skip
    return replace(
        workload,
        replicas=tuple(nodes),
        prechecks=tuple(checks) if draw(st.booleans()) else (),
        run_as=IDENTITY,
        image="registry.example.com/team/pytorch:2.3",
        labels={
            "console.io/job": str(number),
            "console.io/attempt": "1",
            "console.io/owner": "alice",
        },
    )


SCHEMA = job_schema() if (CRDS / "batch.volcano.sh_jobs.yaml").exists() else None


@settings(max_examples=150, deadline=None)
@given(workloads())
def test_every_plan_renders_to_a_job_the_crd_accepts(workload):
    job = render.volcano_job(workload, TARGET)
    assert problems(job, SCHEMA) == []
    assert job["metadata"]["name"] == workload.id
    assert job["metadata"]["labels"]["console.io/workload"] == workload.id
    assert job["metadata"]["labels"]["console.io/owner"] == "alice"
    spec = job["spec"]
    assert spec["schedulerName"] == "volcano" and spec["queue"] == "vision"
    assert spec["minAvailable"] == len(workload.replicas)
    # Never the plugins that rewrite the launch environment.
    assert not set(spec["plugins"]) & {"env", "pytorch", "tensorflow", "mpi"}
    assert ("ssh" in spec["plugins"]) == workload.wait_for_peers


@settings(max_examples=100, deadline=None)
@given(workloads())
def test_each_replica_is_one_task_as_planned(workload):
    job = render.volcano_job(workload, TARGET)
    tasks = job["spec"]["tasks"]
    assert [t["name"] for t in tasks] == [r.name for r in workload.replicas]
    for task, replica in zip(tasks, workload.replicas, strict=True):
        assert task["replicas"] == 1
        pod = task["template"]["spec"]
        (container,) = pod["containers"]
        assert pod["hostname"] == replica.name and pod["subdomain"] == workload.id
        assert set(replica.aliases) <= {f"{replica.name}.{workload.id}"}
        assert pod["nodeSelector"] == {"kubernetes.io/hostname": replica.node}
        assert pod["terminationGracePeriodSeconds"] == workload.graceful_seconds
        assert pod["securityContext"] == {
            "runAsUser": 200007, "runAsGroup": 200007, "fsGroup": 200007,
            "supplementalGroups": [300002],
        }  # fmt: skip
        assert {e["name"]: e["value"] for e in container["env"]} == replica.env
        if replica.runs_entry:
            assert container["command"] == list(replica.argv)
        else:
            assert container["command"] == list(render.PEER_COMMAND)
        resources = container["resources"]
        assert resources["requests"] == resources["limits"]
        assert resources["limits"]["cpu"] == f"{replica.cpu_millicores}m"
        assert resources["limits"].get("nvidia.com/gpu") == (
            str(len(replica.slots)) if replica.slots else None
        )
        mounted = {m["mountPath"]: m for m in container["volumeMounts"]}
        assert mounted["/dev/shm"]["name"] == "dshm"
        # The prechecks (SPEC F1) first, in the job's image, with the boards it counts.
        if workload.prechecks:
            precheck = pod["initContainers"][0]
            assert precheck["name"] == "precheck" and precheck["image"] == workload.image
            assert precheck["resources"] == resources
            env = {e["name"]: e["value"] for e in precheck["env"]}
            assert env["CONSOLE_PRECHECK_BOARDS"] == str(len(replica.slots))
            assert env["CONSOLE_PRECHECK_PEERS"].split() == [
                f"{r.name}.{workload.id}" for r in workload.replicas
            ]
        else:
            assert "initContainers" not in pod
        for source, target, read_only in replica.mounts:
            assert mounted[target]["readOnly"] is read_only
            assert f"{STORAGE}/{mounted[target]['subPath']}" == source
        for path in replica.files:
            assert mounted[path]["subPath"] == render.file_key(replica, path)


@settings(max_examples=60, deadline=None)
@given(workloads())
def test_the_files_travel_in_a_config_map_owned_by_the_job(workload):
    files = render.config_map(workload, TARGET, owner_uid="1234-abcd")
    assert files["metadata"]["name"] == f"{workload.id}-files"
    (owner,) = files["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Job", workload.id, "1234-abcd")
    for replica in workload.replicas:
        for path, text in replica.files.items():
            assert files["data"][render.file_key(replica, path)] == text
    assert all(len(key) <= 253 for key in files["data"])


def test_the_same_workload_renders_the_same():
    request = LaunchRequest(job_name="resnet", mode="pytorch", command="python t.py",
                            cpu_millicores=4000, memory_mib=8192, port=6000, node_count=2,
                            boards=2, mounts=MOUNTS, subdomain="job-9-1")  # fmt: skip
    workload = replace(workload_from_plan(plan(request), "job-9-1"), image="img:1")
    assert render.volcano_job(workload, TARGET) == render.volcano_job(workload, TARGET)


def test_an_mpi_launcher_ends_the_job_and_its_peers_stay_up():
    request = LaunchRequest(job_name="hvd", mode="mpi", command="python train.py",
                            cpu_millicores=4000, memory_mib=8192, port=6000, node_count=3,
                            boards=4, subdomain="job-3-1")  # fmt: skip
    workload = replace(workload_from_plan(plan(request), "job-3-1"), image="img:1")
    tasks = render.volcano_job(workload, TARGET)["spec"]["tasks"]
    assert tasks[0]["policies"] == [{"event": "TaskCompleted", "action": "CompleteJob"}]
    assert all("policies" not in task for task in tasks[1:])
    assert problems(render.volcano_job(workload, TARGET), SCHEMA) == []


def test_a_workload_without_an_image_or_storage_is_refused():
    request = LaunchRequest(
        job_name="x",
        mode="single",
        command="python t.py",
        cpu_millicores=1000,
        memory_mib=1024,
        port=6000,
        mounts=MOUNTS,
    )
    workload = workload_from_plan(plan(request), "job-1-1")
    with pytest.raises(ValueError, match="names none"):
        render.volcano_job(workload, TARGET)
    with pytest.raises(ValueError, match="no storage"):
        render.volcano_job(replace(workload, image="img:1"), render.ClusterTarget("ns"))
    outside = render.ClusterTarget("ns", storage_root="/elsewhere", storage_claim="c")
    with pytest.raises(ValueError, match="not in the cluster's storage"):
        render.volcano_job(replace(workload, image="img:1"), outside)


class TestTheSchemaCheckIsStrict:
    def job(self):
        request = LaunchRequest(job_name="x", mode="single", command="python t.py",
                                cpu_millicores=1000, memory_mib=1024, port=6000)  # fmt: skip
        workload = replace(workload_from_plan(plan(request), "job-1-1"), image="img:1")
        return render.volcano_job(workload, TARGET)

    def test_an_unknown_field_is_named(self):
        job = self.job()
        job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "x"
        assert problems(job, SCHEMA) == [
            "$.spec.tasks[0].template.spec.containers[0].imagePullPolicyy: unknown field"
        ]

    def test_wrong_types_and_enums(self):
        job = self.job()
        job["spec"]["minAvailable"] = "two"
        job["spec"]["policies"][0]["event"] = "PodExploded"
        found = problems(job, SCHEMA)
        assert "$.spec.minAvailable: expected integer, not str" in found
        assert any(
            p.startswith("$.spec.policies[0].event: 'PodExploded' is not one of") for p in found
        )

    def test_a_missing_required_field(self):
        job = self.job()
        del job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["name"]
        assert problems(job, SCHEMA) == [
            "$.spec.tasks[0].template.spec.containers[0].name: required"
        ]


def test_data_preparation_and_lifecycle_scripts_render_as_the_schemas_accept():
    """SPEC J19: an init container copies the dataset into the pod's node-local emptyDir,
    which the command's container mounts read-only at the dataset's target. SPEC J23: the
    command is wrapped by the scripts, and the graceful time leaves room for "after stop"."""
    from resources.backends.base import LifecycleScripts, PreparedData
    from resources.backends.kubernetes.validity import task_problems

    dataset = Mount(f"{STORAGE}/users/alice/cifar/v2", "/workspace/dataset/private/cifar", True)
    request = LaunchRequest(job_name="prep", mode="pytorch", command="python t.py",
                            cpu_millicores=4000, memory_mib=8192, port=6000, node_count=2,
                            boards=1, mounts=(*MOUNTS, dataset), subdomain="job-5-1")  # fmt: skip
    workload = replace(
        workload_from_plan(plan(request), "job-5-1", graceful_seconds=30),
        image="img:1",
        run_as=IDENTITY,
        prepare_data=(PreparedData(dataset.source, dataset.target, "cifar/v2"),),
        scripts=LifecycleScripts(before_start="echo hi", after_stop="echo bye", timeout_seconds=60),
    )
    job = render.volcano_job(workload, TARGET)
    assert problems(job, SCHEMA) == []
    assert task_problems(job) == []
    pod = job["spec"]["tasks"][0]["template"]["spec"]
    [init] = pod["initContainers"]
    assert init["name"] == "prepare-data"
    assert {"name": "prepared-0", "emptyDir": {}} in pod["volumes"]
    main = pod["containers"][0]
    assert {"name": "prepared-0", "mountPath": dataset.target, "readOnly": True} in (
        main["volumeMounts"]
    )
    command = main["command"]
    assert command[:2] == ["/bin/bash", "-c"] and command[3] == "console-lifecycle"
    assert command[4:] == list(workload.replicas[0].argv)
    env = {e["name"]: e["value"] for e in main["env"]}
    assert env["CONSOLE_SCRIPT_BEFORE_START"] == "echo hi"
    assert env["CONSOLE_SCRIPT_TIMEOUT"] == "60"
    assert pod["terminationGracePeriodSeconds"] == 90
    # Without them, nothing changes.
    plain = render.volcano_job(
        replace(workload, prepare_data=(), scripts=LifecycleScripts()), TARGET
    )
    plain_pod = plain["spec"]["tasks"][0]["template"]["spec"]
    assert "initContainers" not in plain_pod and plain_pod["terminationGracePeriodSeconds"] == 30
