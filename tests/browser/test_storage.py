"""Storage belongs to someone, in the browser: another user's folder is refused, in both
languages, with everything typed kept; an empty output path gives the job a folder of its own."""

import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.browser.test_jobs import demo, log_in  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STOLEN = "users/alice/outputs/resnet-ddp"


def fill_job(p, name: str, output: str) -> None:
    p.fill("#id_name", name)
    p.select_option("#id_algorithm", label="ddp-sample")
    p.fill("#id_command", "python3 train.py")
    p.locator("[data-testid=spec-choices] .form-check", has_text="gpu-1").locator("input").check()
    p.select_option("#id_image", label="pytorch-2")
    p.fill("#id_output_path", output)


def test_another_users_output_folder_is_refused_in_both_languages(page, demo):  # noqa: F811
    log_in(page, "bob")
    page.goto("/jobs/new/")
    p = page.page
    fill_job(p, "peek", STOLEN)
    p.click("[data-testid=create]")
    error = p.locator("#id_output_path ~ .invalid-feedback")
    expect(error).to_contain_text("This folder belongs to alice: you may not write there.")
    expect(error).to_contain_text("users/bob/")
    assert p.input_value("#id_output_path") == STOLEN
    assert p.input_value("#id_name") == "peek"
    assert p.input_value("#id_command") == "python3 train.py"
    page.errors.clear()  # the 422 answer is logged by the browser
    p.locator("#id_output_path").scroll_into_view_if_needed()
    page.shot("job-form-output-refused")

    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    p.wait_for_load_state()
    page.goto("/jobs/new/")
    fill_job(p, "peek", STOLEN)
    p.click("[data-testid=create]")
    error = p.locator("#id_output_path ~ .invalid-feedback")
    expect(error).to_contain_text("alice")
    expect(error).to_contain_text("不能写入")
    assert p.input_value("#id_output_path") == STOLEN
    page.errors.clear()
    p.locator("#id_output_path").scroll_into_view_if_needed()
    page.shot("job-form-output-refused-zh")

    p.fill("#id_output_path", "")
    p.click("[data-testid=create]")
    p.wait_for_url(re.compile(r"/jobs/\d+/$"))
    job = Job.objects.get(name="peek")
    assert job.output_path == f"users/bob/outputs/peek-{job.pk}"
    expect(p.locator("[data-testid=output-folder]")).to_contain_text(job.output_path)
    page.shot("job-detail-own-output-zh")
