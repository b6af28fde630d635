"""SPEC J19 and J23 in the browser: a user types the three lifecycle scripts and asks for data
preparation on the form; the job really runs on the local backend, and its page shows the
scripts, their headings in the log and the events, in English and in Chinese."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job, Phase
from resources.catalog.mounts import storage_source
from resources.models import DatasetVersion
from tests.browser.conftest import log_in_as
from tests.jobs.execution_helpers import admit_and_launch, wait_for_phase

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("local_runs"),
]


def test_scripts_and_data_preparation_typed_on_the_form_run(page, demo, beat):
    data = storage_source("users/alice/datasets/cifar10/v2")
    data.mkdir(parents=True, exist_ok=True)
    (data / "train.bin").write_bytes(b"\0" * 2_000_000)
    p = log_in_as(page, "alice")
    page.goto("/jobs/new/")
    p.fill("#id_name", "scripted")
    p.select_option("#id_algorithm", label="resnet-train")
    p.fill("#id_command", 'bash -c "ls /workspace/dataset/private/cifar10"')
    p.locator("[data-testid=spec-choices] .form-check", has_text="cpu-small").locator(
        "input"
    ).check()
    p.select_option("#id_image", label="pytorch-2")
    p.click("button[value=add_dataset]")
    row = p.locator("[data-testid=dataset-row]")
    expect(row).to_have_count(1)
    version = DatasetVersion.objects.get(dataset__name="cifar10", name="v2")
    row.locator("select").select_option(value=str(version.pk))
    row.locator("input[type=checkbox]").check()
    p.check("#id_data_prep")
    p.fill("#id_lifecycle_before_start", "echo setting up in $PWD")
    p.fill("#id_lifecycle_on_failure", "echo the command failed")
    p.fill("#id_lifecycle_after_stop", "echo tidying up")
    expect(p.locator("#id_lifecycle_before_start_helptext")).to_contain_text("bash -c")
    page.shot("lifecycle-form")
    p.click("[data-testid=create]")
    p.wait_for_url(re.compile(r"/jobs/\d+/$"))
    job = Job.objects.get(name="scripted")
    admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED, Phase.ERROR, timeout=60)
    assert job.phase == Phase.SUCCEEDED, job.reason

    page.goto(job.get_absolute_url())
    expect(p.locator("[data-testid=job-phase]")).to_contain_text("Succeeded")
    log = p.locator("#log-text")
    expect(log).to_contain_text("── before start script ──")
    expect(log).to_contain_text("setting up in /workspace")
    expect(log).to_contain_text("train.bin")
    expect(log).to_contain_text("── after stop script ──")
    expect(log).not_to_contain_text("the command failed")
    events = p.locator("[data-testid=events]")
    expect(events).to_contain_text("Preparing data on")
    expect(events).to_contain_text("cifar10/v2, 2.0 MB copied in")
    expect(events).to_contain_text("Before start script on")
    expect(events).to_contain_text("After stop script on")
    scripts = p.locator("[data-testid=lifecycle-scripts]")
    expect(scripts).to_contain_text("echo the command failed")
    page.shot("lifecycle-job")

    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    page.goto(job.get_absolute_url())
    expect(p.locator("#log-text")).to_contain_text("── after stop script ──")
    expect(p.locator("[data-testid=events]")).to_contain_text("cifar10/v2")
    page.shot("lifecycle-job-zh")
