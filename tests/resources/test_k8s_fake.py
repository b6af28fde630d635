"""The fake Kubernetes API server's own strictness: what it refuses, and in which words,
is what the console's backend is tested against, so it must be right on its own."""

from __future__ import annotations

import json

import pytest

from tests.resources.k8s_fake import HAVE_CRDS
from tests.resources.k8s_fake.client import (
    CONFIGMAPS,
    JOBS,
    PODS,
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


def test_an_unknown_field_in_a_volcano_job_is_invalid(api):
    body = volcano_job("train-1")
    body["spec"]["tasks"][0]["replicaz"] = 1
    code, answer = call(api, "POST", JOBS, body)
    assert code == 422
    assert answer["kind"] == "Status" and answer["reason"] == "Invalid"
    assert answer["details"]["kind"] == "Job" and answer["details"]["name"] == "train-1"
    assert answer["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "unknown field",
            "field": "spec.tasks[0].replicaz",
        }
    ]
    assert answer["message"].startswith('Job.batch.volcano.sh "train-1" is invalid: ')
    assert api.objects("ml", "jobs") == []


def test_a_pod_template_is_checked_to_its_fields(api):
    body = volcano_job("train-1")
    body["spec"]["tasks"][0]["template"]["metadata"]["labelz"] = {"a": "b"}
    code, answer = call(api, "POST", JOBS, body)
    assert code == 422
    assert answer["details"]["causes"][0]["field"] == "spec.tasks[0].template.metadata.labelz"


def test_a_configmap_is_checked_strictly(api):
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "f"}, "dataa": {}}
    code, answer = call(api, "POST", CONFIGMAPS, bad)
    assert code == 422 and answer["reason"] == "Invalid"
    assert "dataa" in answer["message"]


def test_a_second_create_is_a_conflict(api):
    assert call(api, "POST", JOBS, volcano_job("train-1"))[0] == 201
    code, answer = call(api, "POST", JOBS, volcano_job("train-1"))
    assert code == 409
    assert answer["reason"] == "AlreadyExists"
    assert answer["message"] == 'jobs.batch.volcano.sh "train-1" already exists'
    assert answer["details"] == {"name": "train-1", "group": "batch.volcano.sh", "kind": "jobs"}
    assert len(api.objects("ml", "jobs")) == 1


def test_created_objects_get_what_the_api_server_sets(api):
    code, created = call(api, "POST", JOBS, volcano_job("train-1"))
    assert code == 201
    metadata = created["metadata"]
    assert metadata["uid"] and metadata["creationTimestamp"].endswith("Z")
    first = int(metadata["resourceVersion"])
    _code, other = call(api, "POST", JOBS, volcano_job("train-2"))
    assert int(other["metadata"]["resourceVersion"]) > first


def test_an_update_with_a_stale_resource_version_is_a_conflict(api):
    _code, created = call(api, "POST", JOBS, volcano_job("train-1"))
    ticks(api, 2)  # the controller writes the status: a new version
    code, answer = call(api, "PUT", f"{JOBS}/train-1", created)
    assert code == 409 and answer["reason"] == "Conflict"
    assert "the object has been modified" in answer["message"]
    fresh = call(api, "GET", f"{JOBS}/train-1")[1]
    assert call(api, "PUT", f"{JOBS}/train-1", fresh)[0] == 200


def test_a_pod_log_before_its_container_starts_is_a_bad_request(api):
    assert call(api, "POST", JOBS, volcano_job("train-1"))[0] == 201
    ticks(api)
    [pod] = api.objects("ml", "pods")
    assert pod["metadata"]["name"] == "train-1-worker-0-0"
    assert pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == (
        "ContainerCreating"
    )
    code, answer = call(api, "GET", f"{PODS}/train-1-worker-0-0/log?container=main")
    assert code == 400 and answer["reason"] == "BadRequest"
    assert answer["message"] == (
        'container "main" in pod "train-1-worker-0-0" is waiting to start: ContainerCreating'
    )


def test_logs_have_the_kubelets_timestamps_and_since_time(api):
    api.script("train-", logs=["one", "two"])
    running(api, "train-1")
    code, text = call(api, "GET", f"{PODS}/train-1-worker-0-0/log?timestamps=true")
    assert code == 200
    lines = text.splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == ["one", "two"]
    stamp = lines[0].split(" ")[0]
    assert len(stamp) == len("2025-01-01T00:00:00.000000000Z") and stamp < lines[1]
    later = f"{int(stamp[:4]) + 1}{stamp[4:19]}Z"
    assert call(api, "GET", f"{PODS}/train-1-worker-0-0/log?sinceTime={later}")[1] == ""
    assert call(api, "GET", f"{PODS}/train-1-worker-0-0/log?limitBytes=3")[1] == "one"


def test_a_list_at_a_compacted_version_is_gone(api):
    call(api, "POST", JOBS, volcano_job("train-1"))
    _code, listed = call(api, "GET", f"{JOBS}?labelSelector=console.io/workload")
    version = listed["metadata"]["resourceVersion"]
    query = f"?resourceVersion={version}&resourceVersionMatch=NotOlderThan"
    assert call(api, "GET", JOBS + query)[0] == 200
    call(api, "POST", JOBS, volcano_job("train-2"))
    api.compact()
    code, answer = call(api, "GET", JOBS + query)
    assert code == 410
    assert answer == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "reason": "Expired",
        "code": 410,
        "message": "The resourceVersion for the provided list is too old.",
    }


def test_label_selectors(api):
    call(api, "POST", JOBS, volcano_job("a", labels={"team": "vision"}))
    call(api, "POST", JOBS, volcano_job("b", labels={"team": "speech"}))
    names = {
        selector: [
            j["metadata"]["name"]
            for j in call(api, "GET", f"{JOBS}?labelSelector={selector}")[1]["items"]
        ]
        for selector in (
            "team=vision",
            "team!=vision",
            "team",
            "!team",
            "team,console.io/workload=b",
            "team%20in%20(a,speech)",
        )
    }
    assert names == {
        "team=vision": ["a"],
        "team!=vision": ["b"],
        "team": ["a", "b"],
        "!team": [],
        "team,console.io/workload=b": ["b"],
        "team%20in%20(a,speech)": ["b"],
    }


def test_a_wrong_token_is_unauthorized(api):
    code, answer = call(api, "GET", JOBS, token="stale")
    assert (code, answer) == (
        401,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        },
    )
    old = api.token
    api.token = "rotated"
    assert call(api, "GET", JOBS, token=old)[0] == 401
    assert call(api, "GET", JOBS, token="rotated")[0] == 200


def test_a_verb_the_account_lacks_is_forbidden_and_said_by_access_reviews(api):
    api.forbidden = {("create", "batch.volcano.sh", "jobs")}
    code, answer = call(api, "POST", JOBS, volcano_job("train-1"))
    assert code == 403 and answer["reason"] == "Forbidden"
    assert answer["message"] == (
        'jobs.batch.volcano.sh is forbidden: User "system:serviceaccount:console:console" '
        'cannot create resource "jobs" in API group "batch.volcano.sh" in the namespace "ml"'
    )
    assert answer["details"] == {"group": "batch.volcano.sh", "kind": "jobs"}
    assert call(api, "GET", JOBS)[0] == 200  # list is another verb

    def review(verb):
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {
                "resourceAttributes": {
                    "verb": verb,
                    "group": "batch.volcano.sh",
                    "resource": "jobs",
                    "namespace": "ml",
                }
            },
        }
        code, answer = call(
            api, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body
        )
        assert code == 201
        return answer["status"]["allowed"]

    assert (review("create"), review("list")) == (False, True)


def test_without_volcano_its_paths_are_not_found(api):
    api.volcano = False
    assert call(api, "GET", JOBS) == (404, "404 page not found\n")
    crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/jobs.batch.volcano.sh"
    code, answer = call(api, "GET", crd)
    assert code == 404 and answer["reason"] == "NotFound"
    api.volcano = True
    code, served = call(api, "GET", crd)
    assert code == 200 and served["spec"]["group"] == "batch.volcano.sh"


def test_down_and_scripted_failures_answer_503(api):
    api.fail_next(1)
    assert call(api, "GET", JOBS)[0] == 503
    assert call(api, "GET", JOBS)[0] == 200
    api.down = True
    code, answer = call(api, "GET", "/version")
    assert code == 503 and answer["reason"] == "ServiceUnavailable"
    assert api.count("GET", JOBS) == 2 and ("GET", "/version") in api.calls


def test_the_consoles_connection_test_reads_it(api):
    from resources.backends.kubernetes.api import Connection
    from resources.backends.kubernetes.backend import KubernetesBackend
    from resources.backends.kubernetes.render import ClusterTarget

    backend = KubernetesBackend(
        Connection("token", server=api.url, token=api.token), ClusterTarget(namespace="ml")
    )
    found = backend.check()
    assert found.ok and found.version == "v1.31.2" and found.nodes == 1
    api.forbidden = {("get", "", "pods/log"), ("list", "metrics.k8s.io", "pods")}
    found = backend.check()
    assert found.missing == ("get pods/log",)
    assert found.optional_missing == ("list pods.metrics.k8s.io",)
    api.volcano = False
    found = backend.check()
    assert not found.volcano and "Volcano is not installed" in found.problems[0]


def test_it_runs_alone_with_many_running_jobs():
    """As a benchmark starts it: another process, one JSON line, then it serves."""
    import subprocess
    import sys

    from resources.backends.base import WorkloadState
    from resources.backends.kubernetes.api import Connection
    from resources.backends.kubernetes.backend import KubernetesBackend
    from resources.backends.kubernetes.render import ClusterTarget

    command = [
        sys.executable,
        "-m",
        "tests.resources.k8s_fake",
        "--jobs",
        "3",
        "--names",
        "job-{i}-1",
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            said = json.loads(process.stdout.readline())
            backend = KubernetesBackend(
                Connection("token", server=said["url"], token=said["token"]),
                ClusterTarget(namespace=said["namespace"]),
            )
            snapshot = backend.refresh()
            assert sorted(snapshot.jobs) == ["job-1-1", "job-2-1", "job-3-1"]
            assert len(snapshot.pods["job-2-1"]) == 1 and "job-2-1" in snapshot.podgroups
            assert backend.poll("job-2-1").state == WorkloadState.RUNNING
        finally:
            process.terminate()
        assert process.wait(10) == 0


def test_the_backend_starts_its_lists_over_after_a_compaction(api):
    from resources.backends.kubernetes.api import Connection
    from resources.backends.kubernetes.backend import KubernetesBackend
    from resources.backends.kubernetes.render import ClusterTarget

    backend = KubernetesBackend(
        Connection("token", server=api.url, token=api.token), ClusterTarget(namespace="ml")
    )
    call(api, "POST", JOBS, volcano_job("train-1"))
    assert list(backend.refresh().jobs) == ["train-1"]
    call(api, "POST", JOBS, volcano_job("train-2"))
    api.compact()
    call(api, "POST", JOBS, volcano_job("train-3"))
    api.reset_calls()
    assert sorted(backend.refresh().jobs) == ["train-1", "train-2", "train-3"]
    asked = [path for method, path in api.calls if path.startswith(JOBS)]
    assert len(asked) == 2 and "resourceVersion=" in asked[0]  # 410, then from scratch
    assert "resourceVersion=" not in asked[1]
