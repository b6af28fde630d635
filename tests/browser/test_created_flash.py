"""After Create, the job page says what is true as it is drawn (issue 14, point 4): a job
that started while the browser followed the redirect is "Running", not "Queued", and the
status then follows the job without a reload, in English and in Chinese."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs import hooks
from jobs.models import Job, Phase
from resources.models import Allocation
from tests.browser.conftest import log_in_as
from tests.jobs.execution_helpers import admit_and_launch, wait_for_phase

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("local_runs")]


@pytest.fixture
def empty_demo(demo):
    # Only the job this test creates runs: the demo's own would compete for the machine.
    Job.objects.all().delete()
    Allocation.objects.all().delete()


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_flash_after_create_says_running_when_it_already_runs(
    page, empty_demo, beat, language, monkeypatch
):
    p = log_in_as(page, "alice", language)
    page.goto("/jobs/new/")
    name = f"flash-{language}"
    p.fill("#id_name", name)
    p.select_option("#id_algorithm", label="resnet-train")
    p.fill("#id_command", 'bash -c "sleep 4"')
    p.locator("[data-testid=spec-choices] .form-check", has_text="gpu-1").locator("input").check()
    p.select_option("#id_image", label="pytorch-2")

    def start_it_first():
        # Between Create and the job page the job is admitted and starts, as it does when
        # the cluster is free and the worker is quick (this runs when the submit commits;
        # later queue changes, such as the job's end, need nothing).
        if started:
            return
        started.append(True)
        admit_and_launch()
        wait_for_phase(Job.objects.get(name=name), Phase.RUNNING)

    started = []

    monkeypatch.setattr(hooks, "queue_listeners", [start_it_first])
    p.click("[data-testid=create]")
    p.wait_for_url(re.compile(r"/jobs/\d+/$"))
    flash = p.locator("#messages")
    badge = p.locator("h1 .badge")
    if language == "en":
        expect(flash).to_have_text(re.compile(rf"Job {name} created\. Status now: Running\."))
        expect(badge).to_have_text("Running")
    else:
        expect(flash).to_contain_text(f"已创建任务 {name}。当前状态：运行中。")
        expect(badge).to_have_text("运行中")
    assert "queued" not in flash.inner_text().lower() and "排队" not in flash.inner_text()
    page.shot(f"created-flash-running-{language}")
    # The status follows the job as it ends, without the user reloading.
    expect(badge).to_have_text("Succeeded" if language == "en" else "成功", timeout=20_000)
    page.shot(f"created-flash-succeeded-{language}")
