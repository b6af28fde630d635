"""Creating and managing jobs in the browser."""

import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page, username):
    page.log_in(username, "demo")
    page.page.wait_for_url(re.compile(r"/$"))


def test_create_a_job_fixing_a_command(page, demo):
    log_in(page, "alice")
    page.goto("/jobs/new/")
    p = page.page
    page.shot("job-form-empty")
    p.fill("#id_name", "my-first-job")
    p.select_option("#id_algorithm", label="resnet-train")
    p.fill("#id_command", "EPOCHS=3 python3 train.py")
    p.locator("[data-testid=spec-choices] .form-check", has_text="gpu-1").locator("input").check()
    p.select_option("#id_image", label="pytorch-2")
    page.shot("job-form")
    p.click("[data-testid=create]")
    error = p.locator("#id_command + .invalid-feedback")
    assert 'bash -c "EPOCHS=3 python3 train.py"' in error.inner_text()
    assert p.input_value("#id_name") == "my-first-job"
    assert p.locator("[data-testid=spec-choices] input:checked").count() == 1
    page.errors.clear()
    page.shot("job-form-error")
    p.fill("#id_command", 'bash -c "EPOCHS=3 python3 train.py"')
    p.click("[data-testid=create]")
    p.wait_for_url(re.compile(r"/jobs/\d+/$"))
    assert "Job my-first-job created. Status now: Queued." in p.locator("#messages").inner_text()
    assert "/workspace/algorithm" in p.locator("[data-testid=workspace]").inner_text()
    page.shot("job-detail")
    assert Job.objects.get(name="my-first-job").status == "queued"


def test_batch_rows_and_resume_options_appear_without_losing_input(page, demo):
    log_in(page, "alice")
    page.goto("/jobs/new/")
    p = page.page
    p.fill("#id_name", "sweep")
    p.check("input[name=job_type][value=batch]")
    p.wait_for_selector("[data-testid=subtask-row]")
    assert p.locator("[data-testid=subtask-row]").count() == 2
    p.fill("#id_subtask_0_command", "python a.py")
    p.click("button[value=add_subtask]")
    expect(p.locator("[data-testid=subtask-row]")).to_have_count(3)
    assert p.input_value("#id_subtask_0_command") == "python a.py"
    assert p.input_value("#id_name") == "sweep"
    p.check("#id_resume_enabled")
    p.wait_for_selector("[data-testid=resume-options]")
    page.shot("job-form-batch")


def test_list_search_and_operations(page, demo):
    log_in(page, "alice")
    page.goto("/jobs/")
    p = page.page
    assert p.locator("[data-testid=job-table] tbody tr").count() == 4
    page.shot("job-list")
    # A row's menu opens whole over the page, not cut off by the table's frame (the first
    # row's, longer than the rows below it, was).
    p.locator("[data-testid=job-table] tbody tr").first.locator(".dropdown-toggle").click()
    last = p.locator("[data-testid=job-table] tbody tr").first.locator(".dropdown-item").last
    expect(last).to_be_visible()
    box = last.bounding_box()
    centre = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    on_top = p.evaluate("([x, y]) => document.elementFromPoint(x, y)?.textContent.trim()", centre)
    assert on_top == last.inner_text().strip() == "Delete"
    page.shot("job-list-operations")
    p.keyboard.press("Escape")
    p.fill("#id_name", "resnet")
    expect(p.locator("[data-testid=job-table] tbody tr")).to_have_count(2)
    page.goto(f"/jobs/{Job.objects.get(name='sweep-large').pk}/")
    p.select_option("#priority", "1")
    p.click("text=Adjust priority")
    assert "Priority is now Urgent." in p.locator("#messages").inner_text()
    p.click("[data-testid=job-actions] >> text=Stop")
    p.click("text=Stop the job")
    assert Job.objects.get(name="sweep-large").status == "stopped"
    page.shot("job-stopped")


def test_read_only_member_sees_but_cannot_act(page, demo):
    log_in(page, "bob")
    job = Job.objects.get(name="resnet-ddp")
    page.goto(f"/jobs/{job.pk}/")
    actions = page.page.locator("[data-testid=job-actions]").inner_text()
    assert "Clone" in actions and "Stop" not in actions
    response = page.goto(f"/jobs/{job.pk}/stop/")
    assert response.status == 403
    page.errors.clear()


def test_prediction_panel_follows_the_form(page, demo):
    from jobs.admission import prediction

    prediction.forget_schedule()
    log_in(page, "alice")
    page.goto("/jobs/new/")
    p = page.page
    panel = p.locator("[data-testid=prediction]")
    expect(panel).to_contain_text("Pick a spec")
    p.select_option("#id_mode", "pytorch")
    p.wait_for_load_state("networkidle")
    p.fill("#id_node_count", "2")
    p.locator("[data-testid=spec-choices] .form-check", has_text="gpu-4").locator("input").check()
    # resnet-ddp holds two boards on two of the four 4-board nodes, and sweep-large (all
    # four nodes) waits for it first: two nodes of gpu-4 for a day come after sweep-large.
    expect(panel.locator("[data-state=queue]")).to_be_visible(timeout=10000)
    expect(panel).to_contain_text("reserved for jobs ahead of it")
    expect(panel).to_contain_text("sweep-large")
    page.shot("job-form-prediction-queue")
    p.fill("#id_node_count", "5")  # there are four such nodes
    p.locator("#id_node_count").dispatch_event("change")
    expect(panel.locator("[data-state=never]")).to_be_visible(timeout=10000)
    page.shot("job-form-prediction-never")


def test_the_prediction_waits_for_a_slow_redraw_of_the_form(page, demo):
    """While the form is redrawn after a change its fields are disabled; a prediction asked
    then would read an empty form ("Pick a spec"). It waits for the redraw instead."""
    import time

    log_in(page, "alice")
    page.goto("/jobs/new/")
    p = page.page
    panel = p.locator("[data-testid=prediction]")
    p.select_option("#id_mode", "pytorch")
    p.wait_for_load_state("networkidle")
    p.locator("[data-testid=spec-choices] .form-check", has_text="gpu-4").locator("input").check()
    expect(panel.locator("[data-state]")).to_be_visible(timeout=10000)

    def slow(route):
        time.sleep(1.5)  # longer than the prediction's 400 ms after a change
        route.continue_()

    p.route("**/jobs/new/refresh/", slow)
    # The first answer after the change: without the wait, one read from the disabled form.
    with (
        p.expect_response(lambda r: "/jobs/new/predict/" in r.url, timeout=15000) as asked,
        p.expect_response(lambda r: "/jobs/new/refresh/" in r.url, timeout=15000),
    ):
        p.select_option("#id_mode", "mpi")  # redraws the form (the roles change)
    assert "Pick a spec" not in asked.value.text()
    expect(panel.locator("[data-state]")).to_be_visible(timeout=10000)
    expect(panel).not_to_contain_text("Pick a spec")


def test_queue_page(page, demo):
    from jobs.admission.db import run_pass

    run_pass()
    log_in(page, "lead")
    page.goto("/queue/")
    expect(page.page.locator("[data-job=sweep-large]")).to_contain_text(
        "needs 4 nodes at once; only 2 can take it now"
    )
    page.shot("queue")


def test_recovery_options_on_the_form_in_both_languages(page, demo):
    """Hang detection that restarts needs a recovery to restart with: a field error, nothing
    lost; with fault restart on, the job is created with both."""
    log_in(page, "alice")
    page.goto("/jobs/new/")
    p = page.page
    p.fill("#id_name", "hang-watched")
    p.select_option("#id_algorithm", label="resnet-train")
    p.fill("#id_command", "python3 train.py")
    p.locator("[data-testid=spec-choices] .form-check", has_text="gpu-1").locator("input").check()
    p.select_option("#id_image", label="pytorch-2")
    p.select_option("#id_hang_policy", "reschedule")
    p.click("[data-testid=create]")
    expect(p.locator("#id_hang_policy.is-invalid")).to_be_visible()
    expect(p.locator("#id_hang_policy")).to_have_value("reschedule")
    expect(p.locator("#id_name")).to_have_value("hang-watched")
    page.errors.clear()
    p.locator("#reliability-heading").scroll_into_view_if_needed()
    page.shot("job-form-recovery-error")
    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    p.wait_for_load_state()
    page.goto("/jobs/new/")
    p.check("#id_fault_restart_enabled")
    expect(p.locator("[data-testid=restart-options]")).to_be_visible()
    p.fill("#id_max_restarts", "2")
    p.select_option("#id_hang_policy", "reschedule")
    expect(p.locator("#reliability-heading")).to_contain_text("故障")
    p.locator("#reliability-heading").scroll_into_view_if_needed()
    page.shot("job-form-recovery-zh")
    p.fill("#id_name", "hang-watched")
    p.select_option("#id_algorithm", label="resnet-train")
    p.fill("#id_command", "python3 train.py")
    p.locator("[data-testid=spec-choices] .form-check", has_text="gpu-1").locator("input").check()
    p.select_option("#id_image", label="pytorch-2")
    p.click("[data-testid=create]")
    p.wait_for_url(re.compile(r"/jobs/\d+/$"))
    job = Job.objects.get(name="hang-watched")
    assert (job.fault_restart_enabled, job.max_restarts, job.hang_policy) == (True, 2, "reschedule")
