"""TensorBoard and JupyterLab in the browser (SPEC O8, O9), through the console's ASGI
server: TensorBoard over a batch job's three sub-tasks shows each one's scalars; JupyterLab,
made from a job, runs a cell and its terminal a command; both in English and Chinese. How
long each takes from the click on "Start" to a page one can use is measured by
`make bench BENCH_ARGS=tools`."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job, Phase, SubTask, Tool
from tests.browser.conftest import logged_in
from tests.jobs.execution_helpers import admit_and_launch, make_job, program, wait_for_phase

pytestmark = [pytest.mark.browser]

WRITER = """
import sys
from torch.utils.tensorboard import SummaryWriter
task = int(sys.argv[1])
writer = SummaryWriter("outputs")
for step in range(20):
    writer.add_scalar("loss", (task + 1) / (step + 1), step)
writer.close()
print("wrote the scalars of sub-task", task, flush=True)
"""


@pytest.fixture
def batch_job(alice, vision, run_cluster, tools_runtime):
    """A batch job of three sub-tasks that each wrote a loss curve, run for real."""
    job = make_job(alice, vision, run_cluster["cpu"], name="sweep", job_type="batch",
                   command="")  # fmt: skip
    job.image.local_runtime = str(tools_runtime)
    job.image.save()
    program(job, "write.py", WRITER)
    for index in range(3):
        SubTask.objects.create(job=job, index=index, algorithm=job.algorithm,
                               command=f"python /workspace/algorithm/write.py {index}")  # fmt: skip
    admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED, Phase.ERROR, timeout=120)
    assert job.phase == Phase.SUCCEEDED, job.reason
    return job


def test_tensorboard_over_every_subtask_of_a_batch_job(asgi_page, alice, batch_job: Job):
    page, p = asgi_page, asgi_page.page
    logged_in(page, alice)
    page.goto(batch_job.get_absolute_url())
    p.click("[data-testid=tensorboard-link]")
    expect(p.locator("[data-testid=tool-start]")).to_be_visible()
    page.shot("tensorboard-before-start")
    p.click("[data-testid=tool-start]")
    frame = p.frame_locator("[data-testid=tool-frame]")
    for index in range(3):
        expect(frame.get_by_text(f"sweep-{index}").first).to_be_visible(timeout=60_000)
    expect(frame.get_by_text("loss").first).to_be_visible()
    expect(p.locator("[data-testid=tool-state]")).to_have_text("running")
    page.shot("tensorboard-running")

    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    expect(p.locator("h1")).to_contain_text("TensorBoard")
    expect(p.frame_locator("[data-testid=tool-frame]").get_by_text("sweep-2").first).to_be_visible(
        timeout=30_000
    )
    page.shot("tensorboard-running-zh")
    # Stopping it leaves the page saying so, with a way to start it again.
    p.locator("#tool-status button[type=submit]").click()
    expect(p.locator("[data-testid=tool-start]")).to_be_visible()
    expect(p.locator("[data-testid=tool-last]")).to_contain_text("alice")


def test_jupyterlab_from_a_job_runs_a_cell(asgi_page, alice, vision, run_cluster, tools_runtime):
    job = make_job(alice, vision, run_cluster["cpu"], name="train-lab")
    job.image.local_runtime = str(tools_runtime)
    job.image.scopes = ["training", "development"]
    job.image.save()
    page, p = asgi_page, asgi_page.page
    logged_in(page, alice)
    page.goto(job.get_absolute_url())
    p.click("text=Create dev environment")
    p.click("main button[type=submit]")
    expect(p.locator("[data-testid=lab-link]")).to_be_visible()
    p.click("[data-testid=lab-link]")
    p.click("[data-testid=tool-start]")
    frame = p.frame_locator("[data-testid=tool-frame]")
    notebook = frame.locator(".jp-LauncherCard[data-category=Notebook]").first
    expect(notebook).to_be_visible(timeout=90_000)
    page.shot("jupyterlab-launcher")
    # JupyterLab draws its terminal on a canvas; in screen-reader mode it also keeps the text
    # in the page, where the test reads it. Its own settings API, through the proxy.
    tool = Tool.objects.get(devenv__from_job=job, state=Tool.State.RUNNING)
    answer = p.request.put(
        f"{page.base_url}/tools/{tool.pk}/lab/api/settings/@jupyterlab/terminal-extension:plugin",
        data=json.dumps({"raw": json.dumps({"screenReaderMode": True})}),
    )
    assert answer.status == 204, answer.text()
    p.reload()
    expect(notebook).to_be_visible(timeout=60_000)
    notebook.click()
    cell = frame.locator(".jp-Notebook .jp-Cell .cm-content").first
    expect(cell).to_be_visible(timeout=30_000)
    # The kernel (the image's Python, as alice) has started and waits.
    expect(frame.locator(".jp-StatusBar-TextItem", has_text="Idle").first).to_be_visible(
        timeout=60_000
    )
    cell.click()
    # The image's Python (torch imports) runs the cell.
    p.keyboard.type("import torch; print(6 * 7, torch.__version__)")
    p.keyboard.press("Shift+Enter")
    expect(frame.locator(".jp-OutputArea-output").first).to_contain_text(
        re.compile(r"42 \d+\.\d+"), timeout=60_000
    )
    page.shot("jupyterlab-cell")

    # Its terminal: bash with the image's Python, in the environment's own folder, which it
    # names as the job knows it (never this machine's folder).
    frame.locator("[data-command='launcher:create']").first.click()
    frame.locator(".jp-LauncherCard[data-category=Other][title*=terminal i]").first.click()
    terminal = frame.locator(".jp-Terminal").first
    rows = terminal.locator(".xterm-accessibility-tree [role=listitem]")
    expect(rows.first).to_contain_text("@train-lab-dev:/workspace/work$", timeout=30_000)
    terminal.click()
    p.keyboard.type("pwd; python -c 'import torch; print(torch.__version__)'")
    p.keyboard.press("Enter")
    # pwd, torch's version, then the prompt again
    answers = (r"^\s*/workspace/work\s*$", r"^\s*\d+\.\d+\.\d+", r"/workspace/work\$\s*$")
    for answer in answers:
        expect(rows.filter(has_text=re.compile(answer))).to_have_count(1, timeout=60_000)
    page.shot("jupyterlab-terminal")

    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    expect(p.frame_locator("[data-testid=tool-frame]").locator(".jp-LabShell")).to_be_visible(
        timeout=60_000
    )
    page.shot("jupyterlab-zh")
    # And back to a job: the form, prefilled from the environment.
    p.locator("nav[aria-label=breadcrumb]").get_by_role("link", name="train-lab-dev").click()
    p.click("[href$='/job/']")
    expect(p.locator("#id_image")).to_have_value(str(job.image_id))
