"""API tokens in the browser (SPEC I2), English and Chinese: alice makes a read-only token,
sees it once, a script uses it over HTTP, her list shows when it was last used, she revokes
it and the script is refused; a bad name keeps what she typed; the API's page lists the
operations and the job's fields; an admin sees and revokes everyone's tokens."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests
from playwright.sync_api import expect

from tests.browser.conftest import log_in_as

pytestmark = pytest.mark.browser

WORDS = {
    "en": {"make": "Make the token", "read": "Read only", "revoke": "Revoke",
           "revoked": "revoked", "never": "never", "ops": "Operations", "taken": "already have"},
    "zh": {"make": "创建令牌", "read": "只读", "revoke": "吊销", "revoked": "已吊销",
           "never": "从未", "ops": "操作", "taken": "已有"},
}  # fmt: skip


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_token_is_made_shown_once_used_and_revoked(page, demo, live_server, language):
    words = WORDS[language]
    p = log_in_as(page, "alice", language)
    page.goto("/account/tokens/")
    p.fill("#id_name", "nightly-retrain")
    p.get_by_label(words["read"]).check()
    p.get_by_role("button", name=words["make"]).click()
    shown = p.locator("[data-testid=new-token-value]")
    expect(shown).to_be_visible()
    token = shown.input_value()
    assert token.startswith("tc_")
    row = p.locator("[data-testid=my-tokens] [data-testid=token-row]")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("nightly-retrain")
    expect(row).to_contain_text(words["never"])
    page.shot(f"api-tokens-made-{language}")

    answer = requests.get(f"{live_server.url}/api/v1/jobs",
                          headers={"Authorization": f"Bearer {token}"}, timeout=10)  # fmt: skip
    assert answer.status_code == 200 and answer.json()["jobs"]
    stop = requests.post(f"{live_server.url}/api/v1/jobs/{answer.json()['jobs'][0]['id']}/stop",
                         headers={"Authorization": f"Bearer {token}"}, timeout=10)  # fmt: skip
    assert stop.status_code == 403  # read only

    page.goto("/account/tokens/")
    expect(p.locator("[data-testid=new-token]")).to_have_count(0)  # shown once only
    expect(row).not_to_contain_text(words["never"])  # its last use is listed
    # The same name again is refused on its field, with what was typed kept.
    p.fill("#id_name", "nightly-retrain")
    p.get_by_role("button", name=words["make"]).click()
    expect(p.locator("#id_name")).to_have_value("nightly-retrain")
    expect(p.locator("[data-testid=error-summary]")).to_contain_text(words["taken"])
    page.shot(f"api-tokens-refused-{language}")
    page.errors.clear()  # Chromium logs the 422 reply as a failed resource

    row.get_by_role("button", name=words["revoke"]).click()
    expect(row).to_contain_text(words["revoked"])
    gone = requests.get(f"{live_server.url}/api/v1/jobs",
                        headers={"Authorization": f"Bearer {token}"}, timeout=10)  # fmt: skip
    assert gone.status_code == 401

    page.goto("/api/v1/docs/")
    expect(p.locator("[data-testid=api-operation]").first).to_be_visible()
    expect(p.get_by_role("heading", name=words["ops"])).to_be_visible()
    expect(p.locator("[data-testid=api-job-fields]")).to_contain_text("graceful_shutdown_seconds")
    page.shot(f"api-docs-{language}")


def test_an_admin_sees_and_revokes_everyones_tokens(page, demo, live_server):
    from django.contrib.auth.models import User

    from console import tokens

    _row, text = tokens.issue(User.objects.get(username="bob"), "laptop", "write")
    p = log_in_as(page, "admin")
    page.goto("/account/tokens/")
    others = p.locator("[data-testid=all-tokens] [data-testid=token-row]")
    expect(others).to_have_count(1)
    expect(others).to_contain_text("bob")
    others.get_by_role("button", name="Revoke").click()
    expect(others).to_contain_text("by admin")
    page.shot("api-tokens-admin-en")
    refused = requests.get(f"{live_server.url}/api/v1/me",
                           headers={"Authorization": f"Bearer {text}"}, timeout=10)  # fmt: skip
    assert refused.status_code == 401


def test_the_form_exports_what_was_typed_as_job_yaml(page, demo):
    import yaml

    p = log_in_as(page, "alice")
    page.goto("/jobs/new/")
    p.fill("#id_name", "typed-in-browser")
    p.select_option("#id_algorithm", label="resnet-train")
    p.fill("#id_command", "python /workspace/algorithm/train.py --epochs 3")
    p.locator("[data-testid=spec-choices] .form-check", has_text="gpu-1").locator("input").check()
    with p.expect_download() as download:
        p.locator("[data-testid=export-yaml]").click()
    assert download.value.suggested_filename == "typed-in-browser.yaml"
    fields = yaml.safe_load(Path(download.value.path()).read_text(encoding="utf-8"))
    assert fields["name"] == "typed-in-browser" and fields["algorithm"] == "resnet-train"
    assert fields["specs"] == ["gpu-1"] and fields["project"] == "vision"
    assert fields["command"] == "python /workspace/algorithm/train.py --epochs 3"
    # Nothing was made, and the form is still as typed.
    expect(p.locator("#id_name")).to_have_value("typed-in-browser")
    page.shot("job-form-export-en")
