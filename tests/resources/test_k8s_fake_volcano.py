"""The fake plays Volcano and the kubelets as a cluster does: a job's phases, its pods and
PodGroup, a gang that waits whole, a failed pod's policy, both kinds of deletion, and pod
metrics."""

from __future__ import annotations

import time

import pytest

from tests.resources.k8s_fake import HAVE_CRDS
from tests.resources.k8s_fake.client import (
    CONFIGMAPS,
    JOBS,
    call,
    one_node_fake,
    running,
    ticks,
)
from tests.resources.k8s_fake.seed import volcano_job

pytestmark = pytest.mark.skipif(
    not HAVE_CRDS, reason="Volcano's CRDs are not beside the checkout (shared/k8s/crds)"
)


@pytest.fixture
def api():
    with one_node_fake() as fake:
        yield fake


def test_phases_pods_and_podgroup_as_volcano_makes_them(api):
    api.script("train-", run_seconds=0.1, exit_code=0)
    job = running(api, "train-1", tasks=2, gpus=1)
    assert job["status"]["state"]["phase"] == "Running"
    assert job["status"]["running"] == 2 and job["status"]["minAvailable"] == 2
    [group] = api.objects("ml", "podgroups")
    assert group["metadata"]["name"] == f"train-1-{job['metadata']['uid']}"
    assert group["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert group["status"]["phase"] == "Running"
    pods = api.objects("ml", "pods")
    assert {p["metadata"]["labels"]["volcano.sh/task-spec"] for p in pods} == {
        "worker-0",
        "worker-1",
    }
    assert all(p["metadata"]["labels"]["console.io/workload"] == "train-1" for p in pods)
    time.sleep(0.15)
    ticks(api, 4)
    job = api.get_job("ml", "train-1")
    assert job["status"]["state"]["phase"] == "Completed" and job["status"]["succeeded"] == 2
    terminated = api.objects("ml", "pods")[0]["status"]["containerStatuses"][0]["state"]
    assert terminated["terminated"]["reason"] == "Completed"


def test_a_gang_that_does_not_fit_waits_whole(api):
    call(api, "POST", JOBS, volcano_job("big", tasks=3, gpus=1))  # 3 GPUs, the node has 2
    ticks(api)
    pods = api.objects("ml", "pods")
    assert len(pods) == 3 and not any(p["spec"].get("nodeName") for p in pods)
    condition = pods[0]["status"]["conditions"][0]
    assert condition["type"] == "PodScheduled" and condition["reason"] == "Unschedulable"
    assert condition["message"] == "0/1 nodes are unavailable: 1 Insufficient nvidia.com/gpu."
    [group] = api.objects("ml", "podgroups")
    assert group["status"]["conditions"][-1]["type"] == "Unschedulable"
    assert api.get_job("ml", "big")["status"]["state"]["phase"] == "Pending"


def test_a_failed_pod_aborts_the_job_by_its_policy(api):
    api.script("train-", run_seconds=0.05, exit_code=3)
    running(api, "train-1")
    time.sleep(0.1)
    ticks(api, 4)
    state = api.get_job("ml", "train-1")["status"]["state"]
    assert state["phase"] == "Aborted"
    [pod] = api.objects("ml", "pods")
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (pod["status"]["phase"], terminated["exitCode"], terminated["reason"]) == (
        "Failed",
        3,
        "Error",
    )


def test_foreground_deletion_waits_for_the_pods_grace(api):
    api.time_scale = 0.2
    running(api, "train-1", grace=1)  # 0.2 s here
    options = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground"}
    code, answer = call(api, "DELETE", f"{JOBS}/train-1", options)
    assert code == 200 and answer["metadata"]["deletionTimestamp"]
    ticks(api, 2)
    [pod] = api.objects("ml", "pods")
    assert pod["metadata"]["deletionTimestamp"] and pod["status"]["phase"] == "Running"
    assert api.get_job("ml", "train-1")["metadata"]["finalizers"] == ["foregroundDeletion"]
    time.sleep(0.25)
    ticks(api, 2)
    assert api.objects("ml", "pods") == [] and api.get_job("ml", "train-1") is None
    assert api.objects("ml", "podgroups") == []


def test_background_deletion_collects_the_owned_objects_after(api):
    _code, job = call(api, "POST", JOBS, volcano_job("train-1"))
    files = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "train-1-files",
            "ownerReferences": [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": "train-1",
                    "uid": job["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": {"hostfile": "a\n"},
    }
    assert call(api, "POST", CONFIGMAPS, files)[0] == 201
    ticks(api)
    assert call(api, "DELETE", f"{JOBS}/train-1?propagationPolicy=Background")[0] == 200
    assert api.get_job("ml", "train-1") is None
    assert len(api.objects("ml", "configmaps")) == 1  # not yet: the collector comes after
    ticks(api, 1)
    assert api.objects("ml", "configmaps") == []
    assert call(api, "DELETE", f"{JOBS}/train-1")[0] == 404


def test_metrics_of_running_pods(api):
    api.script("train-", cpu="1500m", memory="512Mi")
    running(api, "train-1")
    _code, answer = call(api, "GET", "/apis/metrics.k8s.io/v1beta1/namespaces/ml/pods")
    [item] = answer["items"]
    assert item["metadata"]["name"] == "train-1-worker-0-0"
    assert item["containers"][0]["usage"] == {"cpu": "1500000000n", "memory": "524288Ki"}
