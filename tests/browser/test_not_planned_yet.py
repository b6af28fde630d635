"""A long queue planned a part a pass, as a person sees it (jobs.scheduling.core.FRESH): the
queue and the job's page say which jobs are not planned yet, and the form's prediction for a
draft behind them says so instead of a start time; in English and Chinese."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jobs.admission.db import run_pass
from jobs.models import Job
from jobs.scheduling import core
from resources.models import NodeSpec
from tests.browser.conftest import log_in_as
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.browser

WORDS = {
    "en": {"badge": "not planned yet", "page": "No start time yet."},
    "zh": {"badge": "尚未排入计划", "page": "暂无开始时间。"},
}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_jobs_not_planned_yet_say_so_on_every_page(page, demo, language, monkeypatch):
    words = WORDS[language]
    project = Job.objects.get(name="resnet-ddp").project
    from django.contrib.auth.models import User

    lead = User.objects.get(username="lead")
    gpu4 = NodeSpec.objects.get(name="gpu-4")
    for index in range(6):
        JobFactory(owner=lead, project=project, name=f"sweep-{index}", specs=[gpu4],
                   nodes_asked=4)  # fmt: skip
    queued = Job.objects.filter(phase="queued").count()
    monkeypatch.setattr(core, "FRESH", 2)
    assert run_pass().unplanned == queued - 2

    p = log_in_as(page, "lead", language)
    page.goto("/queue/")
    last = p.locator("[data-job=sweep-5]")
    expect(last.locator("[data-testid=not-yet-planned]")).to_have_text(words["badge"])
    page.shot(f"queue-not-planned-yet-{language}")
    page.goto(f"/jobs/{Job.objects.get(name='sweep-5').pk}/")
    expect(p.locator("[data-testid=queue-standing]")).to_contain_text(words["page"])
    page.shot(f"job-not-planned-yet-{language}")

    page.goto("/jobs/new/")
    p.locator("[data-testid=spec-choices] .form-check", has_text="gpu-4").locator("input").check()
    panel = p.locator("[data-testid=prediction] [data-state=queue]")
    expect(panel).to_contain_text(words["badge"])
    page.shot(f"prediction-not-planned-yet-{language}")
