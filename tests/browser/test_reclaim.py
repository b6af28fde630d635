"""A borrowing job reclaimed, in the browser (SPEC G2), in English and Chinese: vision runs
one job within its guarantee and one on borrowed boards; speech's job waits within its own
guarantee; the worker's pass stops the borrower (it saves a checkpoint) and starts speech's
job. The borrower's page tells its owner who took the boards and why, and that it waits to
continue from its checkpoint; the claim's page names the job that stopped for it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.models import Attempt, Phase
from jobs.tasks import admit
from tests.browser.conftest import logged_in
from tests.helpers import wait_until
from tests.jobs.execution_helpers import log_of, make_job, program
from tests.jobs.test_reclaim import CHECKPOINTING, two_teams_one_node

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("local_runs")]


@pytest.fixture
def shared(vision, speech):
    return two_teams_one_node(vision, speech)


def running(job) -> bool:
    admit()  # the worker's task: a pass, then the reclaim
    job.refresh_from_db()
    assert job.phase not in (Phase.ERROR, Phase.SUCCEEDED), job.reason
    return job.phase == Phase.RUNNING


def test_a_borrower_is_reclaimed_and_its_page_says_by_whom(
    page,
    alice,
    charlie,
    vision,
    speech,
    shared,
    beat,
):
    within = make_job(alice, vision, shared, name="v-within", command="sleep 600")
    wait_until(lambda: running(within), 30, 0.3)
    borrower = make_job(alice, vision, shared, name="v-borrow", resume_enabled=True,
                        max_resumes=1, graceful_shutdown_seconds=5,
                        command="python3 /workspace/algorithm/train.py")  # fmt: skip
    program(borrower, "train.py", CHECKPOINTING)
    wait_until(lambda: running(borrower), 30, 0.3)
    wait_until(lambda: "training" in log_of(borrower.attempts.get()), 30, 0.2)

    claim = make_job(charlie, speech, shared, name="s-claim", command="sleep 600")
    wait_until(lambda: running(claim), 40, 0.3)
    borrower.refresh_from_db()
    assert borrower.phase == Phase.QUEUED
    attempts = list(
        borrower.attempts.order_by("number").values_list("number", "stop_cause", "state", "reason")
    )
    events = list(borrower.events.order_by("pk").values_list("message", flat=True))
    assert len(attempts) == 1, "\n".join([str(attempts), *events])
    assert borrower.attempts.get().stop_cause == Attempt.StopCause.RECLAIM

    p = page.page
    logged_in(page, alice)
    page.goto(borrower.get_absolute_url())
    events = p.locator("[data-testid=events]")
    expect(events).to_contain_text(
        "Its Demo-GPU boards are reclaimed for Speech, whose job s-claim waits within its "
        "guarantee; Vision runs beyond its own guarantee of 1."
    )
    expect(events).to_contain_text("it continues from its last checkpoint")
    expect(p.locator("[data-testid=job-phase]")).to_contain_text("Waiting in the queue")
    page.shot("reclaimed-borrower-en")
    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    expect(events).to_contain_text("其 Demo-GPU 板卡被收回给 Speech")
    expect(events).to_contain_text("其借用的板卡已被收回")
    expect(events).to_contain_text("使用借用的板卡：加上它，Vision 占用 2 块")  # its admission
    page.shot("reclaimed-borrower-zh")

    p.context.clear_cookies()
    logged_in(page, charlie)
    page.goto(claim.get_absolute_url())
    expect(p.locator("[data-testid=events]")).to_contain_text(
        "Reclaiming boards for it: 1 job of Vision on borrowed boards stops (v-borrow)"
    )
    page.shot("reclaim-claim-en")
    within.refresh_from_db()
    assert within.phase == Phase.RUNNING  # within its own guarantee: never touched
