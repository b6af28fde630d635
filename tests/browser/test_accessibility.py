"""axe-core over the pages a user lives in (issue 14): the job form, a job's page, the job
list, the queue and the cluster, in English and in Chinese, with no serious or critical
violation."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe

from jobs.models import Job
from tests.browser.conftest import log_in_as

pytestmark = pytest.mark.browser

PAGES = ["/jobs/new/", "job", "/jobs/", "/queue/", "/cluster/", "/usage/", "/projects/vision/"]
BLOCKING = {"serious", "critical"}


def _report(violations: list[dict]) -> str:
    lines = []
    for violation in violations:
        targets = [" ".join(map(str, node["target"])) for node in violation["nodes"][:5]]
        lines.append(f"{violation['impact']} {violation['id']}: {violation['help']} at {targets}")
    return "\n".join(lines)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_no_serious_accessibility_violations(page, demo, language):
    axe = Axe()
    p = log_in_as(page, "alice", language)
    job = Job.objects.get(name="resnet-ddp")
    found = {}
    for path in PAGES:
        page.goto(job.get_absolute_url() if path == "job" else path)
        p.wait_for_load_state("networkidle")
        if path == "/jobs/new/":  # with a spec chosen, so the prediction panel shows too
            p.locator("[data-testid=spec-choices] input").first.check()
            p.wait_for_load_state("networkidle")
        result = axe.run(p)
        blocking = [v for v in result.response["violations"] if v["impact"] in BLOCKING]
        if blocking:
            found[path] = _report(blocking)
    assert not found, "\n".join(f"{path}:\n{text}" for path, text in found.items())
