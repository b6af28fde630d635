"""One story per job (issue 14), in the browser: the sample DDP training really runs on the
local backend; its page shows the command as typed and, folded apart, the launch command;
the image by the form's name; the output folder as a link to the checkpoints; "ends by"
while it runs and "Ended at" once it has ended; logs with the job's paths only. In English
and in Chinese."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from playwright.sync_api import expect

from jobs.models import Phase
from resources.models import Image
from tests.helpers import wait_until
from tests.jobs.execution_helpers import admit_and_launch, log_of, make_job, program, wait_for_phase

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("local_runs")]


def sample_job(alice, vision, spec, runtime, name: str, steps: int, sleep: float):
    from resources import samples

    job = make_job(
        alice, vision, spec, name=name, mode="pytorch", nodes_asked=1,
        command=f"python /workspace/algorithm/train.py --steps {steps} --sleep {sleep}",
        graceful_shutdown_seconds=5,
    )  # fmt: skip
    Image.objects.filter(pk=job.image_id).update(
        name=f"pytorch-2-{name}",
        reference=f"registry.example.com/training/pytorch:2.4-cpu-{name}",
        local_runtime=str(runtime),
    )
    program(job, "train.py", samples.TRAIN_SCRIPT.read_text())
    return job


def no_host_paths(p) -> None:
    """Nothing on the page names a folder of the console's machine."""
    text = p.locator("main").inner_text()
    for folder in (settings.RUNS_DIR, settings.STORAGE_ROOT):
        assert str(folder) not in text, folder


def accessible(p) -> None:
    """No serious or critical axe-core violation on the page as it is now."""
    from axe_playwright_python.sync_playwright import Axe

    result = Axe().run(p)
    blocking = [v for v in result.response["violations"] if v["impact"] in ("serious", "critical")]
    assert not blocking, [(v["id"], v["help"]) for v in blocking]


def to_chinese(p) -> None:
    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    expect(p.locator("#logs-heading")).to_have_text("日志")


def test_a_finished_job_tells_its_story(page, alice, password, vision, run_cluster, torch_runtime):
    job = sample_job(alice, vision, run_cluster["cpu"], torch_runtime, "mlp-story", 4, 0)
    [attempt] = admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED, Phase.ERROR, timeout=120)
    assert job.phase == Phase.SUCCEEDED, job.reason + log_of(attempt)

    p = page.page
    page.log_in("alice", password)
    p.wait_for_url(re.compile(r"/$"))
    page.goto(job.get_absolute_url())
    typed = p.locator("[data-testid=typed-command]")
    expect(typed.locator("pre").first).to_have_text(job.command)
    launch = p.locator("[data-testid=launch-command]")
    expect(launch.locator("summary")).to_have_text("Launch command")
    expect(launch.locator("pre")).not_to_be_visible()  # folded until asked for
    launch.locator("summary").click()
    expect(launch.locator("pre")).to_contain_text("-m torch.distributed.launch")
    expect(launch.locator("pre")).to_contain_text("/workspace/algorithm/train.py --steps 4")
    expect(p.locator("[data-testid=image-name]")).to_have_text("pytorch-2-mlp-story")
    expect(p.locator("[data-testid=image-reference]")).to_have_text(
        "registry.example.com/training/pytorch:2.4-cpu-mlp-story"
    )
    expect(p.locator("[data-testid=ended-at]")).to_contain_text("Ended at ")
    expect(p.locator("[data-testid=ends-by]")).to_have_count(0)
    log = p.locator("#log-text")
    expect(log).to_contain_text("no checkpoint in /workspace/outputs: starting from step 0")
    expect(log).to_contain_text("saved /workspace/outputs/checkpoint-4.pt")
    no_host_paths(p)
    accessible(p)
    page.shot("job-story-finished")

    p.click("[data-testid=output-link]")
    p.wait_for_url(re.compile(rf"/jobs/{job.pk}/outputs/$"))
    expect(p.locator("[data-testid=outputs-path]")).to_have_text("/workspace/outputs")
    expect(p.locator("[data-testid=outputs]")).to_contain_text("checkpoint-4.pt")
    no_host_paths(p)
    accessible(p)
    page.shot("job-story-outputs")

    page.goto(job.get_absolute_url())
    to_chinese(p)
    expect(p.locator("[data-testid=typed-command] pre").first).to_have_text(job.command)
    expect(p.locator("[data-testid=image-name]")).to_have_text("pytorch-2-mlp-story")
    expect(p.locator("[data-testid=ended-at]")).to_be_visible()
    expect(p.locator("[data-testid=output-link]")).to_have_text(job.output_path)
    expect(p.locator("#log-text")).to_contain_text("saved /workspace/outputs/checkpoint-4.pt")
    p.locator("[data-testid=launch-command] summary").click()
    no_host_paths(p)
    page.shot("job-story-finished-zh")


def test_a_running_job_says_when_it_ends_at_the_latest(
    page, alice, password, vision, run_cluster, torch_runtime, beat
):
    job = sample_job(alice, vision, run_cluster["cpu"], torch_runtime, "mlp-long", 3000, 0.2)
    [attempt] = admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING, Phase.ERROR, timeout=60)
    assert job.phase == Phase.RUNNING, job.reason
    wait_until(lambda: "step 3/" in log_of(attempt), 60, 0.3)

    p = page.page
    page.log_in("alice", password)
    p.wait_for_url(re.compile(r"/$"))
    page.goto(job.get_absolute_url())
    expect(p.locator("[data-testid=job-phase]")).to_contain_text("Running")
    expect(p.locator("[data-testid=ends-by]")).to_contain_text("ends by ")
    expect(p.locator("[data-testid=ended-at]")).to_have_count(0)
    expect(p.locator("[data-testid=typed-command] pre").first).to_have_text(job.command)
    expect(p.locator("#log-text")).to_contain_text(
        "no checkpoint in /workspace/outputs: starting from step 0"
    )
    no_host_paths(p)
    page.shot("job-story-running")

    to_chinese(p)
    expect(p.locator("[data-testid=ends-by]")).to_be_visible()
    expect(p.locator("[data-testid=image-name]")).to_have_text("pytorch-2-mlp-long")
    no_host_paths(p)
    page.shot("job-story-running-zh")
