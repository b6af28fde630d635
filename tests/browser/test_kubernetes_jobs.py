"""A job on a Kubernetes cluster, all the way through the browser: the form sends it to the
cluster's pool, the Celery worker admits and submits it as a Volcano job to the fake API
server, the page follows it running (log, usage chart, the cluster's words), Stop ends it,
Delete removes it and its objects from the cluster."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs.backend import attempt_backend
from jobs.models import Job
from resources.catalog.mounts import storage_source
from tests.helpers import wait_until
from tests.jobs.k8s_cluster import gpu_spec
from tests.resources.catalog_factories import AlgorithmFactory
from tests.resources.factories import ImageFactory
from tests.resources.k8s_fake import HAVE_CRDS

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_CRDS, reason="Volcano's CRDs are not beside the checkout"),
]


def test_a_job_on_the_cluster_from_form_to_deletion(
    page, alice, password, vision, cluster, fake, celery_worker, beat
):
    spec = gpu_spec()
    ImageFactory(name="pytorch-2", board_kinds=["GPU"])
    algorithm = AlgorithmFactory(name="trainer", owner=alice, project=vision)
    storage_source(algorithm.path).mkdir(parents=True, exist_ok=True)
    fake.script(
        "job-",
        logs=[f"epoch {i}: loss {1 / i:.3f}" for i in range(1, 6)],
        cpu="1500m",
        memory="3Gi",
    )
    page.log_in("alice", password)
    p = page.page
    p.wait_for_url(re.compile(r"/$"))
    page.goto("/jobs/new/")
    p.fill("#id_name", "on-the-cluster")
    p.select_option("#id_algorithm", label="trainer")
    p.fill("#id_command", "python3 /workspace/algorithm/train.py")
    p.locator("[data-testid=spec-choices] .form-check", has_text=spec.name).locator("input").check()
    p.select_option("#id_image", label="pytorch-2")
    p.select_option("#id_pool", label=cluster.default_pool.name)
    p.fill("#id_graceful_shutdown_seconds", "2")  # then cleaned up 7 s after its deletion
    p.click("[data-testid=create]")
    p.wait_for_url(re.compile(r"/jobs/\d+/$"))
    job = Job.objects.get(name="on-the-cluster")
    expect(p.locator("[data-testid=job-phase]")).to_contain_text("Running", timeout=20_000)
    log = p.locator("#log-text")
    expect(log).to_contain_text("epoch 5: loss 0.200", timeout=15_000)
    expect(p.locator("[data-testid=usage] polyline")).to_have_count(2, timeout=15_000)
    attempt = job.attempts.get()
    assert attempt.cluster_id == cluster.pk
    assert fake.get_job("ml", attempt.workload_id) is not None
    expect(p.locator("[data-testid=attempts]")).to_contain_text(f"on cluster {cluster.name}")
    page.shot("k8s-job-running")

    p.click("[data-testid=job-actions] >> text=Stop")
    p.click("text=Stop the job")
    expect(p.locator("[data-testid=job-phase]")).to_contain_text("Stopped", timeout=20_000)
    expect(log).to_contain_text("epoch 1: loss 1.000")  # the copy outlives the pods
    assert fake.get_job("ml", attempt.workload_id) is None
    page.shot("k8s-job-stopped")
    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    expect(p.locator("[data-testid=job-phase]")).to_contain_text("停止")
    page.shot("k8s-job-stopped-zh")

    p.click("[data-testid=job-actions] >> text=删除")
    p.click("main button[type=submit]")
    p.wait_for_url(re.compile(r"/jobs/$"))
    assert not Job.objects.filter(pk=job.pk).exists()
    logs = attempt_backend(attempt).store.root / attempt.workload_id
    expect(p.locator("#messages")).to_contain_text("已删除 on-the-cluster")
    page.shot("k8s-job-deleted-zh")

    def cleaned() -> bool:
        return not logs.exists() and fake.objects("ml", "configmaps") == []

    wait_until(cleaned, 30, 0.3)
