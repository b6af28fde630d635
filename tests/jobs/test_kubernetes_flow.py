"""Jobs on a Kubernetes cluster with Volcano (SPEC E2, F7, O2), against an HTTP fake of the
API server that validates what it receives against Volcano's CRDs and the Kubernetes
OpenAPI and plays the Volcano controller: submit, run, logs, usage, stop, delete, failures
in the cluster's words, and faults of the API itself.

The console's own code runs unchanged: the real admission pass, the real Celery worker for
stops and deletions, real HTTP through the official client.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from jobs import operations
from jobs.backend import attempt_backend
from jobs.execution import runs
from jobs.models import Attempt, JobEvent, Phase, UsageSample
from jobs.tasks import admit
from resources.models import Node
from tests.helpers import wait_until
from tests.jobs.execution_helpers import admit_and_launch, make_job, wait_for_phase
from tests.jobs.k8s_cluster import gpu_spec
from tests.resources.k8s_fake import HAVE_CRDS

pytestmark = pytest.mark.skipif(
    not HAVE_CRDS, reason="Volcano's CRDs are not beside the checkout (shared/k8s/crds)"
)

JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/ml/jobs"


@pytest.fixture
def spec(cluster):
    return gpu_spec()


def events(job) -> list[str]:
    return list(
        JobEvent.objects.filter(job=job).order_by("at", "id").values_list("message", flat=True)
    )


def launch(alice, vision, spec, cluster, **fields):
    job = make_job(alice, vision, spec, pool=cluster.default_pool, **fields)
    attempts = admit_and_launch()
    return job, attempts


def test_nodes_come_from_the_cluster_into_its_pool(cluster):
    nodes = Node.objects.filter(cluster=cluster).order_by("name")
    assert [n.name for n in nodes] == ["gpu-01", "gpu-02"]
    assert {n.pool for n in nodes} == {cluster.default_pool}
    assert nodes[0].board_count == 4 and nodes[0].accelerator_model.name == "A100"


def test_submit_run_log_usage_stop_delete(alice, vision, spec, cluster, fake, celery_worker):
    fake.script("job-", logs=["epoch 1: loss 0.9", "epoch 2: loss 0.5"], cpu="1500m",
                memory="512Mi")  # fmt: skip
    fake.reset_calls()
    job = make_job(alice, vision, spec, pool=cluster.default_pool, graceful_shutdown_seconds=20)
    # The real worker admits and launches it (a pass of our own here would race with it).
    admit.delay()
    attempt = wait_until(lambda: Attempt.objects.filter(job=job).first(), 15, 0.2)
    wait_until(lambda: Attempt.objects.get(pk=attempt.pk).submitted_at, 15, 0.2)
    assert attempt.backend == "kubernetes" and attempt.cluster_id == cluster.pk
    # One Volcano Job and its ConfigMap, as rendered, accepted by the strict fake.
    created = fake.get_job("ml", attempt.workload_id)
    assert created["metadata"]["labels"]["console.io/job"] == str(job.pk)
    assert created["spec"]["schedulerName"] == "volcano"
    job = wait_for_phase(job, Phase.RUNNING)

    def logged():
        text, _ = attempt_backend(attempt).logs(attempt.workload_id, attempt.replicas[0]["name"])
        return "epoch 2: loss 0.5" in text

    wait_until(logged, 10)

    def sampled():
        runs.sync()
        return UsageSample.objects.filter(attempt=attempt).first()

    sample = wait_until(sampled, 15, 0.3)
    assert sample.cpu_percent == 150.0 and sample.memory_mib == 512.0

    operations.stop(job, alice)
    job = wait_for_phase(job, Phase.STOPPED, timeout=20)
    assert fake.get_job("ml", attempt.workload_id) is None
    text, _ = attempt_backend(attempt).logs(attempt.workload_id, attempt.replicas[0]["name"])
    assert text.count("epoch 1: loss 0.9") == 1  # copied once, kept after the pod went

    operations.delete(job, alice)
    logs_dir = attempt_backend(attempt).store.root / attempt.workload_id
    # Stopped already, so nothing waits for its graceful time (20 s): cleaned up at once.
    wait_until(lambda: not logs_dir.exists(), 10, 0.2)
    assert fake.objects("ml", "configmaps") == []


def test_a_failing_pod_ends_the_job_with_its_exit_code(alice, vision, spec, cluster, fake):
    fake.script("job-", exit_code=3, run_seconds=0.3, logs=["about to fail"])
    job, [attempt] = launch(alice, vision, spec, cluster)
    job = wait_for_phase(job, Phase.ERROR)
    attempt.refresh_from_db()
    assert attempt.exit_code == 3
    assert events(job)[-1] == f"Failed: {attempt.replicas[0]['name']} exited with code 3."
    text, _ = attempt_backend(attempt).logs(attempt.workload_id, attempt.replicas[0]["name"])
    assert "about to fail" in text  # the last copy, taken when it ended


def test_out_of_memory_is_said(alice, vision, spec, cluster, fake):
    fake.script("job-", oom=True, run_seconds=0.2)
    job, _ = launch(alice, vision, spec, cluster)
    job = wait_for_phase(job, Phase.ERROR)
    assert "ran out of memory (OOMKilled, exit code 137)" in events(job)[-1]


def test_a_job_the_scheduler_cannot_place_says_why(alice, vision, spec, cluster, fake):
    message = "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu."
    fake.script("job-", unschedulable=message)
    job, _ = launch(alice, vision, spec, cluster)

    def said():
        runs.sync()
        return any(message in e for e in events(job))

    wait_until(said, 10, 0.2)
    job.refresh_from_db()
    assert job.phase == Phase.STARTING


def test_an_image_that_cannot_be_pulled_is_a_warning(alice, vision, spec, cluster, fake):
    fake.script("job-", image_pull_error=True)
    job, _ = launch(alice, vision, spec, cluster)

    def warned():
        runs.sync()
        return JobEvent.objects.filter(
            job=job, kind=JobEvent.Kind.WARNING, message__contains="ErrImagePull"
        ).exists()

    wait_until(warned, 10, 0.2)


def test_a_render_the_cluster_cannot_take_ends_as_error_in_words(alice, vision, cluster):
    cluster.storage_host_path = ""
    cluster.save()
    job, _attempts = launch(alice, vision, gpu_spec(), cluster)
    job.refresh_from_db()
    assert job.phase == Phase.ERROR
    assert "the cluster has no storage for the job's mounts" in events(job)[-1]


class TestFaultsOfTheApi:
    def test_down_while_running_then_back(self, alice, vision, spec, cluster, fake):
        job, [_attempt] = launch(alice, vision, spec, cluster)
        job = wait_for_phase(job, Phase.RUNNING)
        fake.down = True
        runs.sync()
        runs.sync()  # said once, not on every pass
        lost = [e for e in events(job) if e.startswith("Lost touch with the cluster")]
        assert len(lost) == 1
        job.refresh_from_db()
        assert job.phase == Phase.RUNNING  # nothing lost: it runs on there
        fake.down = False
        runs.sync()
        assert events(job)[-1] == "The cluster answers again."

    def test_a_submit_it_did_not_answer_is_retried_once_it_does(
        self, alice, vision, spec, cluster, fake
    ):
        fake.down = True
        job, _launched = launch(alice, vision, spec, cluster)  # (lists submitted ones only)
        attempts = list(Attempt.objects.filter(job=job))
        assert attempts[0].submitted_at is None and attempts[0].submit_tries == 1
        assert "The cluster does not answer" in events(job)[-1]
        fake.down = False
        Attempt.objects.filter(pk=attempts[0].pk).update(
            created_at=attempts[0].created_at - timedelta(seconds=10)
        )  # the pause before the next try has passed (not yet the time to give up)
        job = wait_for_phase(job, Phase.RUNNING)
        assert fake.count("POST", JOBS) == 1
        assert "The cluster answers again: submitted." in events(job)

    def test_a_lost_answer_to_a_submit_makes_no_second_job(
        self, alice, vision, spec, cluster, fake
    ):
        job, [attempt] = launch(alice, vision, spec, cluster)
        backend = attempt_backend(attempt)
        from jobs.execution import workloads

        workload = workloads.build(job, attempt.number, None)
        backend.submit(workload)  # as a retry after a timeout would: 409, ours, fine
        assert len(fake.objects("ml", "jobs")) == 1

    def test_an_expired_token_is_said_and_nothing_changes(self, alice, vision, spec, cluster, fake):
        job, _ = launch(alice, vision, spec, cluster)
        job = wait_for_phase(job, Phase.RUNNING)
        fake.token = "rotated"
        runs.sync()
        assert "the API refused our credentials (401)" in events(job)[-1]
        job.refresh_from_db()
        assert job.phase == Phase.RUNNING

    def test_a_verb_our_account_lacks(self, alice, vision, spec, cluster, fake):
        fake.forbidden = {("create", "batch.volcano.sh", "jobs")}
        job, _ = launch(alice, vision, spec, cluster)
        job.refresh_from_db()
        assert job.phase == Phase.ERROR
        assert "our account may not create Volcano jobs (403)" in events(job)[-1]

    def test_volcano_missing(self, alice, vision, spec, cluster, fake):
        fake.volcano = False
        job, _ = launch(alice, vision, spec, cluster)
        job.refresh_from_db()
        assert job.phase == Phase.ERROR
        assert "Volcano is not installed on the cluster" in events(job)[-1]

    def test_a_job_deleted_behind_our_back(self, alice, vision, spec, cluster, fake):
        job, [attempt] = launch(alice, vision, spec, cluster)
        job = wait_for_phase(job, Phase.RUNNING)
        fake.vanish(attempt.workload_id)
        job = wait_for_phase(job, Phase.ERROR)
        assert "deleted outside the console" in events(job)[-1]

    def test_5xx_on_the_lists_is_said_and_passes(self, alice, vision, spec, cluster, fake):
        job, _ = launch(alice, vision, spec, cluster)
        job = wait_for_phase(job, Phase.RUNNING)
        fake.fail_next(1, code=503)
        runs.sync()
        assert events(job)[-1].startswith("Lost touch with the cluster")
        runs.sync()
        assert events(job)[-1] == "The cluster answers again."


def test_one_sync_pass_costs_the_same_calls_for_one_job_or_many(alice, vision, cluster, fake):
    spec = gpu_spec()
    for i in range(6):
        make_job(alice, vision, spec, pool=cluster.default_pool, name=f"many-{i}")
    assert len(admit_and_launch()) == 6
    wait_until(lambda: runs.sync() and all(
        a.state == Attempt.State.RUNNING for a in Attempt.objects.all()), 15, 0.3)  # fmt: skip
    attempt_backend(Attempt.objects.first())._snapshot.at = 0.0
    fake.reset_calls()
    runs.sync()
    lists = [c for c in fake.calls if c[0] == "GET" and "/log" not in c[1]]
    assert len(lists) <= 4, lists  # jobs, pods, pod groups (+ metrics when due)


def test_the_debug_terminal_enters_the_running_pod(alice, vision, spec, cluster, fake, asgi_web):
    """SPEC J20 on a cluster: the job page offers a terminal per node, and it is a shell in
    that node's pod (pods/exec), in the pod's working folder."""
    from django.test import Client

    from tests.jobs.test_terminal import open_terminal, read_until

    job, _ = launch(alice, vision, spec, cluster, debug_terminal=True)
    job = wait_for_phase(job, Phase.RUNNING, Phase.ERROR, timeout=30)
    attempt = Attempt.objects.get(job=job)
    replica = attempt.replicas[0]["name"]
    client = Client()
    client.force_login(alice)
    assert f"/jobs/{job.pk}/terminal/{replica}/" in client.get(f"/jobs/{job.pk}/").content.decode()
    [pod] = [
        p
        for p in fake.objects("ml", "pods")
        if p["metadata"]["name"].startswith(attempt.workload_id)
    ]
    with open_terminal(asgi_web.removeprefix("http://"), job, replica, alice) as terminal:
        read_until(terminal, r"[#$] ")  # the prompt
        terminal.send(b"pwd\r")
        assert str(fake.workdirs / pod["metadata"]["name"]) in read_until(terminal, r"fake-pods")
    assert job.events.filter(message__contains="terminal").exists()
