"""The debug terminal in the browser (SPEC J20): from the job page's "Open terminal" to a
shell in the running job's node, through the console's ASGI server (the WebSocket needs
it), in English and Chinese. How long the click takes to give a prompt is measured by
`make bench BENCH_ARGS=tools`."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs.models import Attempt, Phase
from resources.inventory import identity
from tests.browser.conftest import logged_in
from tests.jobs.execution_helpers import admit_and_launch, make_job, program, wait_for_phase
from tests.resources.k8s_fake import HAVE_CRDS

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("local_runs")]

SLEEPER = "import time\nprint('training', flush=True)\ntime.sleep(300)\n"
PROMPT = re.compile(r"@[a-z0-9-]+:/workspace\$")


def test_open_the_terminal_of_a_running_job(asgi_page, alice, vision, run_cluster):
    job = make_job(alice, vision, run_cluster["cpu"], name="debugme", debug_terminal=True,
                   command="python3 /workspace/algorithm/t.py")  # fmt: skip
    program(job, "t.py", SLEEPER)
    admit_and_launch()
    wait_for_phase(job, Phase.RUNNING)
    replica = Attempt.objects.get(job=job).replicas[0]["name"]
    page = asgi_page
    p = page.page
    logged_in(page, alice)

    page.goto(job.get_absolute_url())
    p.click(f"[data-testid=open-terminal-{replica}]")
    expect(p.locator(".xterm-rows")).to_contain_text(PROMPT, timeout=15_000)

    rows = p.locator(".xterm-rows")
    p.locator("[data-testid=terminal]").click()
    p.keyboard.type("pwd; id\n")
    expect(rows).to_contain_text(re.compile(r"^/workspace$|/workspace\s*uid=", re.M))
    uid = identity.user_number(alice.pk)
    expect(rows).to_contain_text(f"uid={uid}(console-u{alice.pk})")
    expect(p.locator("[data-testid=terminal-status]")).to_have_attribute("data-state", "open")
    expect(p.locator("[data-testid=terminal-identity]")).to_contain_text(f"console-u{alice.pk}")
    page.shot("terminal-running")

    # Chinese: the same terminal, the page in the other language.
    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    page.goto(f"/jobs/{job.pk}/terminal/{replica}/")
    expect(p.locator(".xterm-rows")).to_contain_text(PROMPT, timeout=15_000)
    p.locator("[data-testid=terminal]").click()
    p.keyboard.type("pwd; id\n")
    expect(p.locator(".xterm-rows")).to_contain_text(f"uid={uid}(console-u{alice.pk})")
    page.shot("terminal-running-zh")
    p.click("[data-testid=back-to-job]")
    expect(p.locator("[data-testid=debug-terminal]")).to_be_visible()
    # The click and the visit in Chinese (the language switch reloads the terminal page too,
    # which may be left before its socket opens).
    assert job.events.filter(message__contains="opened a debug terminal").count() >= 2


@pytest.mark.skipif(not HAVE_CRDS, reason="Volcano's CRDs are not beside the checkout")
def test_open_the_terminal_of_a_job_running_on_a_cluster(asgi_page, alice, vision, cluster, fake):
    """The same page on Kubernetes: the shell is in the node's pod (pods/exec)."""
    from tests.jobs.k8s_cluster import gpu_spec

    job = make_job(alice, vision, gpu_spec(), name="on-cluster", debug_terminal=True,
                   pool=cluster.default_pool)  # fmt: skip
    admit_and_launch()
    wait_for_phase(job, Phase.RUNNING, timeout=30)
    attempt = Attempt.objects.get(job=job)
    replica = attempt.replicas[0]["name"]
    page = asgi_page
    p = page.page
    logged_in(page, alice)
    page.goto(job.get_absolute_url())
    p.click(f"[data-testid=open-terminal-{replica}]")
    rows = p.locator(".xterm-rows")
    expect(rows).to_contain_text(re.compile(r"@[^:\s]+:~[#$]"), timeout=15_000)
    p.locator("[data-testid=terminal]").click()
    p.keyboard.type("pwd\n")
    expect(rows).to_contain_text(f"{fake.workdirs}/{attempt.workload_id}")  # the pod's folder
    expect(p.locator("[data-testid=terminal-status]")).to_have_attribute("data-state", "open")
    identity_words = p.locator("[data-testid=terminal-identity]")
    expect(identity_words).to_contain_text("the node's pod on the cluster")
    expect(identity_words).not_to_contain_text("console-u")  # not the local job identity
    page.shot("terminal-running-k8s")
    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    expect(identity_words).to_contain_text("集群上的 Pod")
    expect(rows).to_contain_text(re.compile(r"@[^:\s]+:~[#$]"), timeout=15_000)
    page.shot("terminal-running-k8s-zh")
