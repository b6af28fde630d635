"""Watching a job that really runs: the log follows in the page, the charts are drawn, and
stopping it from the page ends it as stopped."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs.models import Phase
from tests.jobs.execution_helpers import admit_and_launch, make_job, program, wait_for_phase

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("local_runs")]


def test_watch_a_running_job_then_stop_it(page, alice, password, vision, run_cluster, beat):
    job = make_job(
        alice,
        vision,
        run_cluster["cpu"],
        name="talker",
        command="python3 /workspace/algorithm/talk.py",
        graceful_shutdown_seconds=2,
    )
    program(
        job,
        "talk.py",
        """
        import itertools, signal, sys, time

        def save_and_exit(*_):
            print("saving a checkpoint, then exiting", flush=True)
            sys.exit(0)

        signal.signal(signal.SIGTERM, save_and_exit)
        for step in itertools.count():
            print(f"step {step}: loss {1 / (step + 1):.4f}", flush=True)
            time.sleep(0.2)
        """,
    )
    admit_and_launch()
    wait_for_phase(job, Phase.RUNNING)
    page.log_in("alice", password)
    page.page.wait_for_url(re.compile(r"/$"))
    page.goto(job.get_absolute_url())
    p = page.page
    log = p.locator("#log-text")
    expect(log).to_contain_text("step 1:")
    expect(log).to_contain_text("step 15:", timeout=10_000)  # followed, without a reload
    # CPU and memory, once sampled (a flat line has no height: count, not visibility).
    expect(p.locator("[data-testid=usage] polyline")).to_have_count(2, timeout=15_000)
    page.shot("job-running")
    p.click("[data-testid=job-actions] >> text=Stop")
    p.click("main button[type=submit]")
    expect(p.locator("[data-testid=job-phase]")).to_contain_text("Stopped", timeout=15_000)
    expect(p.locator("#log-text")).to_contain_text("saving a checkpoint, then exiting")
    expect(p.locator("#log-follow")).to_contain_text("End of log.")
    page.shot("job-stopped")
    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    expect(p.locator("#logs-heading")).to_have_text("日志")
    expect(p.locator("#log-follow")).to_contain_text("日志结束。")
    page.shot("job-stopped-zh")


def test_a_failed_batch_job_in_chinese(page, alice, password, vision, run_cluster, beat):
    from jobs.models import JobType, SubTask

    job = make_job(
        alice, vision, run_cluster["cpu"], name="sweep", job_type=JobType.BATCH, command=""
    )
    for index, code in enumerate((0, 3)):
        SubTask.objects.create(
            job=job,
            index=index,
            algorithm=job.algorithm,
            command=f"python3 /workspace/algorithm/task.py {code}",
        )
    program(
        job,
        "task.py",
        """
        import sys
        print("sub-task exits with", sys.argv[1], flush=True)
        sys.exit(int(sys.argv[1]))
        """,
    )
    admit_and_launch()
    wait_for_phase(job, Phase.ERROR)
    page.log_in("alice", password)
    page.page.wait_for_url(re.compile(r"/$"))
    p = page.page
    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    page.goto(job.get_absolute_url())
    expect(p.locator("[data-testid=job-phase]")).to_contain_text("子任务 2 运行失败")
    runs_table = p.locator("[data-testid=attempts]")
    expect(runs_table).to_contain_text("子任务 1")
    expect(runs_table).to_contain_text("退出码 3")
    expect(p.locator("#log-text")).to_contain_text("sub-task exits with 3")
    expect(p.locator("#job-logs .btn-group").first).to_contain_text("子任务 1")
    # A run that ended before its first sample says so; on a busy machine a poll may have
    # seen it running, and its one sample is charted instead.
    from jobs.models import UsageSample

    sampled = UsageSample.objects.filter(attempt__job=job, attempt__subtask__index=1).exists()
    expect(p.locator("[data-testid=usage]")).to_contain_text(
        "当前" if sampled else "每 1 秒采样一次"  # beat samples every second
    )
    page.shot("job-batch-failed-zh")
