"""A newcomer's first Horovod-style job, from the browser form to success: the demo's
mpi-sample on one node with two boards (seed 000's commonest MPI job), its mpirun from the
PyTorch runtime's own Open MPI, both ranks run by worker 0 without ssh."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from jobs.models import Job, Phase
from resources.models import Image
from tests.browser.conftest import logged_in
from tests.jobs.execution_helpers import admit_and_launch, log_of

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("local_runs")]


def test_an_mpi_job_on_one_node_from_the_form_succeeds(page, demo, mpi_runtime, beat):
    # Only this job runs: the demo's own queued jobs would take the machine meanwhile.
    Job.objects.filter(phase=Phase.QUEUED).delete()
    Image.objects.filter(name="pytorch-2").update(local_runtime=str(mpi_runtime))
    logged_in(page, get_user_model().objects.get(username="alice"))
    p = page.page
    page.goto("/jobs/new/")
    p.fill("#id_name", "mpi-one-node")
    p.select_option("#id_algorithm", label="mpi-sample")
    p.locator("[data-testid=suggestion] button[value=use_suggestion]").click()
    expect(p.locator("#id_mode")).to_have_value("mpi")
    p.fill("#id_node_count", "1")
    p.fill("#id_command", "python /workspace/algorithm/train.py --steps 4")
    p.locator("[data-testid=spec-choices] .form-check", has_text="gpu-2").locator("input").check()
    expect(p.locator("[data-testid=prediction] [data-state]")).to_be_visible()
    p.locator("main button[type=submit]", has_text="Create").click()
    p.wait_for_url(re.compile(r"/jobs/\d+/$"))
    job = Job.objects.get(name="mpi-one-node")
    assert (job.mode, job.nodes_asked) == ("mpi", 1)
    admit_and_launch()
    expect(p.locator("[data-testid=job-phase]")).to_contain_text("Succeeded", timeout=60_000)
    entry = log_of(job.attempts.get())
    assert "training: 2 MPI ranks" in entry and "done: 4 steps" in entry, entry
    assert "ssh" not in entry, entry
    assert "Could not find the environment variable" not in entry, entry  # a clean log
    expect(p.locator("#log-text")).to_contain_text("done: 4 steps")
    page.shot("mpi-one-node-succeeded")
