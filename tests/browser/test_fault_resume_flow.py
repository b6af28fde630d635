"""One job through a fault, in the browser (issue 13): a checkpointing PyTorch job runs after
its prechecks (one event per check); an admin injects a lost heartbeat on its node through
the fault page; inspection stops it (it saves a checkpoint), isolates the node and requeues
it; it resumes on another node from the saved step and succeeds. The job page tells it all,
in English and in Chinese, and /cluster/ shows the isolated node."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from console import limits
from jobs.models import Phase
from jobs.tasks import admit, watch_faults
from resources.models import Image, Node
from tests.helpers import every, wait_until
from tests.jobs.execution_helpers import log_of, make_job, program

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("local_runs")]

STEPS = 60


@pytest.fixture
def inspection(admin):
    """Beat's fault watch, every half second, inspecting every second."""
    limits.save({"inspection_seconds": 1}, admin)
    with every(0.5, watch_faults, join=10):
        yield


def step_of(job) -> int:
    attempt = job.attempts.order_by("-number").first()
    found = re.findall(r"step (\d+)/", log_of(attempt)) if attempt else []
    return int(found[-1]) if found else 0


def test_a_job_survives_a_lost_node_and_resumes_from_its_checkpoint(
    page, admin, password, alice, vision, run_cluster, torch_runtime, celery_worker, beat,
    inspection,
):  # fmt: skip
    from resources import samples

    job = make_job(
        alice, vision, run_cluster["cpu"], name="resnet-resume",
        command=f"python /workspace/algorithm/train.py --steps {STEPS} --sleep 0.1",
        resume_enabled=True, max_resumes=2, graceful_shutdown_seconds=20,
    )  # fmt: skip
    Image.objects.filter(pk=job.image_id).update(local_runtime=str(torch_runtime))
    program(job, "train.py", samples.TRAIN_SCRIPT.read_text())
    admit.delay()
    p = page.page
    page.log_in("admin", password)
    p.wait_for_url(re.compile(r"/$"))
    page.goto(job.get_absolute_url())
    expect(p.locator("[data-testid=job-phase]")).to_contain_text("Running", timeout=30_000)
    events = p.locator("[data-testid=events]")
    for item in ("dns", "disk-size root", "disk-size shm", "disk-size cache"):
        expect(events).to_contain_text(f"Precheck {item} passed")
    wait_until(lambda: step_of(job) >= 10, 60, 0.3)
    node = job.attempts.get().replicas[0]["node"]
    page.shot("fault-flow-running")

    page.goto("/settings/faults/")
    p.select_option("#id_node", str(Node.objects.get(name=node).pk))
    p.select_option("#id_kind", "heartbeat")
    p.locator("[data-testid=fault-form] button[type=submit]").click()
    expect(p.locator("#messages")).to_contain_text(f"Injected on {node}: Heartbeat lost")

    page.goto(job.get_absolute_url())
    expect(events).to_contain_text(f"Inspection found heartbeat lost on {node}", timeout=20_000)
    expect(events).to_contain_text("resume 1 of 2", timeout=30_000)
    expect(p.locator("[data-testid=job-phase]")).to_contain_text("Succeeded", timeout=90_000)
    job.refresh_from_db()
    first, second = job.attempts.order_by("number")
    saved = int(re.search(r"stopped by SIGTERM at step (\d+)", log_of(first)).group(1))
    assert saved >= 10 and second.replicas[0]["node"] != node
    assert f"(step {saved})" in log_of(second) and f"done: {STEPS} steps" in log_of(second)
    assert job.phase == Phase.SUCCEEDED and job.resumes_used == 1
    faults = p.locator("[data-testid=faults]")
    expect(faults).to_contain_text("Checkpoint resume: 1 of 2 used")
    expect(faults).to_contain_text("heartbeat")
    expect(faults).to_contain_text(node)
    p.locator("[data-testid=logs]").scroll_into_view_if_needed()
    page.shot("fault-flow-succeeded")

    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    expect(p.locator("[data-testid=job-phase]")).to_contain_text("成功")
    expect(events).to_contain_text("预检")
    expect(p.locator("[data-testid=faults]")).to_contain_text("续训 1/2")
    expect(events).not_to_contain_text("Inspection found")
    page.shot("fault-flow-succeeded-zh")
    page.goto("/cluster/")
    isolated = p.locator("[data-testid=isolated-nodes]")
    expect(isolated).to_contain_text(node)
    expect(isolated).to_contain_text("心跳丢失")
    page.shot("fault-flow-cluster-zh")
