"""Storage belongs to someone, in the browser: another user's folder is refused, in both
languages, with everything typed kept; an empty output path gives the job a folder of its own."""

import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.browser.test_jobs import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STOLEN = "users/alice/outputs/resnet-ddp"


def fill_job(p, name: str, output: str) -> None:
    p.fill("#id_name", name)
    p.select_option("#id_algorithm", label="ddp-sample")
    p.fill("#id_command", "python3 train.py")
    p.locator("[data-testid=spec-choices] .form-check", has_text="gpu-1").locator("input").check()
    p.select_option("#id_image", label="pytorch-2")
    p.fill("#id_output_path", output)


def submit_stolen(page, shot: str):
    """Fill the form with another user's output folder and submit it: the field's error,
    with everything typed still there."""
    p = page.page
    page.goto("/jobs/new/")
    fill_job(p, "peek", STOLEN)
    p.click("[data-testid=create]")
    error = p.locator("#id_output_path ~ .invalid-feedback")
    expect(error).to_contain_text("alice")
    assert p.input_value("#id_output_path") == STOLEN
    assert p.input_value("#id_name") == "peek"
    assert p.input_value("#id_command") == "python3 train.py"
    page.errors.clear()  # the 422 answer is logged by the browser
    p.locator("#id_output_path").scroll_into_view_if_needed()
    page.shot(shot)
    return error


def test_another_users_output_folder_is_refused_in_both_languages(page, demo):
    log_in(page, "bob")
    p = page.page
    error = submit_stolen(page, "job-form-output-refused")
    expect(error).to_contain_text("This folder belongs to alice: you may not write there.")
    expect(error).to_contain_text("users/bob/")

    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    p.wait_for_load_state()
    error = submit_stolen(page, "job-form-output-refused-zh")
    expect(error).to_contain_text("此文件夹属于 alice：您不能写入。")

    p.fill("#id_output_path", "")
    p.click("[data-testid=create]")
    p.wait_for_url(re.compile(r"/jobs/\d+/$"))
    job = Job.objects.get(name="peek")
    assert job.output_path == f"users/bob/outputs/peek-{job.pk}"
    expect(p.locator("[data-testid=output-folder]")).to_contain_text(job.output_path)
    page.shot("job-detail-own-output-zh")


def test_a_clone_starts_afresh_unless_it_resumes_on_purpose(page, demo):
    job = Job.objects.get(name="resnet-baseline")
    log_in(page, "alice")
    page.goto(f"/jobs/{job.pk}/clone/")
    p = page.page
    notice = p.locator("[data-testid=clone-outputs]")
    expect(notice).to_contain_text("writes to a new folder of its own")
    assert p.input_value("#id_output_path") == ""
    page.shot("job-clone-afresh")
    p.click("[data-testid=resume-link]")
    expect(notice).to_contain_text("resumes from the checkpoints there")
    assert p.input_value("#id_output_path") == job.output_path
    page.shot("job-clone-resume")


def test_the_queue_lists_only_what_the_reader_may_see(page, demo):
    from console.sharing import Access
    from jobs.admission.db import run_pass
    from tests.jobs.factories import JobFactory

    alice = Job.objects.get(name="sweep-large").owner
    JobFactory(
        owner=alice, project=Job.objects.get(name="sweep-large").project, name="secret-sweep",
        others_access=Access.NONE, specs=list(Job.objects.get(name="sweep-large").specs.all()),
    )  # fmt: skip
    run_pass()
    log_in(page, "bob")
    page.goto("/queue/")
    p = page.page
    expect(p.locator("[data-job=sweep-large]")).to_be_visible()
    expect(p.locator("[data-job=secret-sweep]")).to_have_count(0)
    expect(p.locator("[data-testid=hidden-jobs]")).to_contain_text(
        "1 more queued job is not shared with you"
    )
    assert p.locator("form.queue-priority").count() == 0  # bob may change none of them
    page.shot("queue-as-member")
