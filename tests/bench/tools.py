"""Click to a usable page, for each tool a user opens from the console (SPEC O8, O9, J20),
in Chromium through the console's ASGI web server, with real processes:

* TensorBoard over a finished 3-sub-task batch job: the click on "Start TensorBoard" until
  the scalars of all three sub-tasks are drawn (a cold start each run), and opening the
  page of one already running until the same;
* JupyterLab of a development environment: the click on "Start JupyterLab" until the
  launcher shows (a cold start each run);
* the debug terminal of a running job: the click on "Open terminal" until the prompt, on a
  local node and in a pod on a Kubernetes cluster (the test suite's fake API server, whose
  pods/exec runs a real shell over a WebSocket).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

from tests.bench.harness import bench_database, stop_group

RUNS = int(os.environ.get("BENCH_TOOL_RUNS", "5"))
SLEEPER = "import time\nprint('training', flush=True)\ntime.sleep(3600)\n"


def _seconds(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    middle = ordered[len(ordered) // 2]
    return f"p50 {middle:.2f} s, p95 {p95:.2f} s ({len(ordered)} runs)"


def _world(runtime: Path):
    """alice in vision; a finished batch job whose three sub-tasks wrote a loss curve; a
    development environment; a running job with the debug terminal on."""
    from django.contrib.auth.models import User

    from console.models import Membership, Project
    from jobs.models import DevEnvironment, Phase, SubTask
    from resources.catalog.mounts import storage_source
    from resources.models import AcceleratorModel, Image, Node, NodeSpec
    from tests.jobs.execution_helpers import admit_and_launch, make_job, program, wait_for_phase
    from tests.jobs.tools_helpers import write_scalars

    alice = User.objects.create_user("alice", password="bench")
    vision = Project.objects.create(name="Vision", slug="vision")
    Membership.objects.create(project=vision, user=alice)
    model = AcceleratorModel.objects.create(name="Demo-GPU")
    Node.objects.create(name="bench-node", cpu_millicores=8000, memory_mib=16 * 1024,
                        board_count=2, accelerator_model=model)  # fmt: skip
    spec = NodeSpec.objects.create(name="cpu-1", cpu_millicores=1000, memory_mib=1024,
                                   boards=Decimal(0))  # fmt: skip
    image = Image.objects.create(name="pytorch-2", reference="console.local/pytorch:2",
                                 scopes=["training", "development"],
                                 local_runtime=str(runtime))  # fmt: skip

    sweep = make_job(alice, vision, spec, name="sweep", job_type="batch", command="",
                     image=image, status="succeeded", phase=Phase.SUCCEEDED)  # fmt: skip
    outputs = storage_source(sweep.output_path)
    for index in range(3):
        SubTask.objects.create(job=sweep, index=index, algorithm=sweep.algorithm,
                               command="true")  # fmt: skip
    runs = [outputs / f"sweep-{index}" for index in range(3)]
    write_scalars(runtime, runs, "loss", [1.0, 0.5, 0.25, 0.1])
    env = DevEnvironment.objects.create(name="lab", owner=alice, project=vision, image=image,
                                        spec=spec)  # fmt: skip

    debug = make_job(alice, vision, spec, name="debugme", image=image, debug_terminal=True,
                     command="python3 /workspace/algorithm/sleep.py")  # fmt: skip
    program(debug, "sleep.py", SLEEPER)
    admit_and_launch()
    debug = wait_for_phase(debug, Phase.RUNNING, Phase.ERROR, timeout=60)
    if debug.phase != Phase.RUNNING:
        raise RuntimeError(f"the debug job did not start: {debug.reason}")
    return alice, sweep, env, debug


def _cluster_terminal(page, base: str, alice, vision, folder: Path) -> tuple[str, str]:
    """The debug terminal of a job running on a cluster: Open clicked → the pod's prompt."""
    import re

    from django.conf import settings

    from jobs.models import Phase
    from tests.jobs.execution_helpers import admit_and_launch, make_job, wait_for_phase
    from tests.jobs.k8s_cluster import NODES, add_cluster, gpu_spec
    from tests.resources.k8s_fake import HAVE_CRDS, FakeKubernetes

    what = "Debug terminal in a cluster's pod: Open clicked → prompt"
    if not HAVE_CRDS:
        return (what, "skipped: Volcano's CRDs are not beside the checkout")
    settings.CLUSTER_LOGS_DIR = folder / "cluster-logs"
    with FakeKubernetes(NODES, auto=True) as fake:
        cluster = add_cluster(vision, url=fake.url, token=fake.token)
        job = make_job(alice, vision, gpu_spec(), name="in-pod",
                       debug_terminal=True, pool=cluster.default_pool)  # fmt: skip
        admit_and_launch()
        wait_for_phase(job, Phase.RUNNING, timeout=60)
        shell = _terminal_prompts(page, base, job, re.compile(r"@[^:\s]+:~[#$]"))
        page.goto(f"{base}/jobs/")  # closes the last shell before the fake stops
    return (what, _seconds(shell))


def _terminal_prompts(page, base: str, job, prompt) -> list[float]:
    """Seconds from the click on the job's first node's "Open terminal" to ``prompt``."""
    from playwright.sync_api import expect

    from jobs.models import Attempt

    replica = Attempt.objects.get(job=job).replicas[0]["name"]
    rows = page.locator(".xterm-rows")
    shell = []
    for _ in range(RUNS * 2):
        page.goto(f"{base}/jobs/{job.pk}/")
        shell.append(
            _timed(
                lambda: page.click(f"[data-testid=open-terminal-{replica}]"),
                lambda: expect(rows).to_contain_text(prompt, timeout=30_000),
            )
        )
    return shell


def _stop_tools() -> None:
    from jobs.models import Tool
    from jobs.tools import service

    for tool in Tool.objects.filter(state__in=service.LIVE):
        service.stop(tool, "bench")


def _timed(start: Callable[[], object], usable: Callable[[], object]) -> float:
    started = time.monotonic()
    start()
    usable()
    return time.monotonic() - started


def tool_pages():
    from playwright.sync_api import expect, sync_playwright

    from tests.browser.conftest import CHROMIUM, FLAGS

    if not Path(CHROMIUM).exists():
        return [("tools", "skipped: Debian's chromium is not installed")]
    figures = []
    with tempfile.TemporaryDirectory() as temporary, bench_database():
        from django.conf import settings
        from django.db import connections
        from django.test import Client

        from jobs.models import Attempt
        from resources.inventory import runtimes
        from tests.helpers import free_port, start_web_process

        result = runtimes.ensure(runtimes.TORCH)
        if not result.ready:
            return [("tools", f"skipped: no PyTorch runtime ({result.status})")]
        folder = Path(temporary)
        folder.chmod(0o755)  # the job's user (another identity) must be able to enter it
        settings.RUNS_DIR = folder / "runs"
        settings.STORAGE_ROOT = folder / "storage"
        settings.NODE_CACHE_DIR = folder / "node-cache"
        alice, sweep, env, debug = _world(result.folder)
        web = start_web_process(free_port())
        base = f"http://127.0.0.1:{web.port}"
        client = Client()
        client.force_login(alice)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                session = client.cookies["sessionid"].value
                context.add_cookies([{"name": "sessionid", "value": session, "url": base}])
                page = context.new_page()
                frame = page.frame_locator("[data-testid=tool-frame]")

                def scalars():
                    for index in range(3):
                        expect(frame.get_by_text(f"sweep-{index}").first).to_be_visible(
                            timeout=120_000
                        )
                    expect(frame.get_by_text("loss").first).to_be_visible(timeout=60_000)

                cold, warm = [], []
                for _ in range(RUNS):
                    page.goto(f"{base}/jobs/{sweep.pk}/tensorboard/")
                    cold.append(_timed(lambda: page.click("[data-testid=tool-start]"), scalars))
                    warm.append(
                        _timed(lambda: page.goto(f"{base}/jobs/{sweep.pk}/tensorboard/"), scalars)
                    )
                    _stop_tools()
                figures.append(("TensorBoard: Start clicked → scalars of 3 runs", _seconds(cold)))
                figures.append(("TensorBoard: a running one's page → scalars", _seconds(warm)))

                launcher = frame.locator(".jp-LauncherCard[data-category=Notebook]").first
                lab = []
                for _ in range(RUNS):
                    page.goto(f"{base}/devenvs/{env.pk}/lab/")
                    lab.append(
                        _timed(
                            lambda: page.click("[data-testid=tool-start]"),
                            lambda: expect(launcher).to_be_visible(timeout=120_000),
                        )
                    )
                    _stop_tools()
                figures.append(("JupyterLab: Start clicked → launcher", _seconds(lab)))

                shell = _terminal_prompts(page, base, debug, ":/workspace$")
                figures.append(("Debug terminal: Open clicked → prompt", _seconds(shell)))
                figures.append(_cluster_terminal(page, base, alice, debug.project, folder))
                browser.close()
                _stop_tools()
                # Inside Playwright's event loop the ORM had a connection of its own.
                connections.close_all()
        finally:
            _stop_tools()
            # Its worker too (its own session), so that no connection keeps the database.
            stop_group(web, 20)
            from jobs import operations

            with contextlib.suppress(Exception):
                operations.stop(debug, alice)
            from resources.backends import local_backend

            for attempt in Attempt.objects.all():
                with contextlib.suppress(Exception):
                    local_backend().cleanup(attempt.workload_id)
    return figures
