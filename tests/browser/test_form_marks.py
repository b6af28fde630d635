"""The job form in English and Chinese: what it requires is marked and announced, the
legend says what the mark means, and an error is linked to its field without losing what
was typed."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from tests.browser.conftest import Page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(settings):
    settings.DEMO_MODE = True
    call_command("seed_demo", stdout=io.StringIO())


@pytest.fixture(params=["en-US", "zh-CN"], ids=["en", "zh"])
def tab(request, chromium, live_server):
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, locale=request.param)
    page = Page(context.new_page(), live_server.url)
    page.language = request.param[:2]
    yield page
    context.close()
    assert not page.errors, page.errors


def assert_required(p, field_id: str) -> None:
    field = p.locator(f"#{field_id}")
    expect(field).to_have_attribute("required", "")
    expect(field).to_have_attribute("aria-required", "true")
    mark = p.locator(f"label[for={field_id}] .required-mark")
    expect(mark).to_be_visible()
    expect(mark).to_have_text("*")
    # The star is hidden from screen readers; the words are not, and name the field.
    expect(mark).to_have_attribute("aria-hidden", "true")
    expect(field).to_have_accessible_name(re.compile(r"\(\S+\)\s*$"))


def assert_optional(p, field_id: str) -> None:
    field = p.locator(f"#{field_id}")
    expect(field).not_to_have_attribute("required", "")
    expect(field).not_to_have_attribute("aria-required", "true")
    expect(p.locator(f"label[for={field_id}] .required-mark")).to_have_count(0)


def test_the_job_form_marks_what_it_requires_and_links_errors(tab, demo):
    p = tab.page
    tab.log_in("alice", "demo")
    p.wait_for_url(re.compile(r"/$"))
    tab.goto("/jobs/new/")

    legend = p.locator("[data-testid=required-legend]")
    expect(legend).to_be_visible()
    expect(legend.locator(".required-mark")).to_have_text("*")
    # The legend comes before the first field.
    legend_top = legend.bounding_box()["y"]
    assert legend_top < p.locator("#id_name").bounding_box()["y"]
    for field in ("id_name", "id_priority", "id_algorithm", "id_command", "id_mode",
                  "id_node_count", "id_image", "id_duration_hours"):  # fmt: skip
        assert_required(p, field)
    for field in ("id_output_path", "id_node_names", "id_pool", "id_driver_version"):
        assert_optional(p, field)
    specs = p.locator("[data-testid=spec-choices] legend")
    expect(specs.locator(".required-mark")).to_be_visible()
    job_type = p.locator("fieldset[role=radiogroup]", has=p.locator("#id_job_type_0"))
    expect(job_type).to_have_attribute("aria-required", "true")
    expect(job_type.locator("legend .required-mark")).to_be_visible()
    tab.shot(f"form-marks-{tab.language}")

    # A batch job requires an algorithm and a command per sub-task instead.
    p.check("#id_job_type_1")
    p.wait_for_selector("#id_subtask_0_algorithm")
    assert_required(p, "id_subtask_0_algorithm")
    assert_required(p, "id_subtask_0_command")
    expect(p.locator("#id_algorithm")).to_have_count(0)
    p.check("#id_job_type_0")
    p.wait_for_selector("#id_algorithm")
    # Checkpoint resume requires a pool and its count.
    assert_optional(p, "id_pool")
    p.check("#id_resume_enabled")
    p.wait_for_selector("#id_max_resumes")
    assert_required(p, "id_pool")
    assert_required(p, "id_max_resumes")
    p.uncheck("#id_resume_enabled")
    p.wait_for_selector("#id_max_resumes", state="detached")

    # Everything but the name, then Create.
    p.select_option("#id_algorithm", label="resnet-train")
    p.fill("#id_command", "python3 train.py --epochs 3")
    p.locator("[data-testid=spec-choices] .form-check", has_text="gpu-1").locator("input").check()
    p.select_option("#id_image", label="pytorch-2")
    p.fill("#id_lifecycle_before_start", "echo ready")
    p.click("[data-testid=create]")
    p.wait_for_selector("#id_name_error")
    tab.errors.clear()  # the refusal's 422 is reported as a failed resource

    name = p.locator("#id_name")
    expect(name).to_have_attribute("aria-invalid", "true")
    assert "id_name_error" in name.get_attribute("aria-describedby").split()
    error = p.locator("#id_name_error")
    expect(error).to_be_visible()
    expect(name).to_have_accessible_description(re.compile(error.inner_text().strip()))
    summary = p.locator("[data-testid=error-summary]")
    expect(summary).to_be_visible()
    link = summary.locator("a[href='#id_name']")
    expect(link).to_be_visible()
    tab.shot(f"form-marks-error-{tab.language}")
    link.click()
    expect(name).to_be_focused()

    # Nothing typed is lost.
    expect(p.locator("#id_command")).to_have_value("python3 train.py --epochs 3")
    expect(p.locator("#id_lifecycle_before_start")).to_have_value("echo ready")
    expect(p.locator("#id_algorithm option:checked")).to_have_text("resnet-train")
    expect(p.locator("#id_image option:checked")).to_have_text("pytorch-2")
    checked = p.locator("[data-testid=spec-choices] .form-check", has_text="gpu-1")
    expect(checked.locator("input")).to_be_checked()
    p.locator("#error-summary").scroll_into_view_if_needed()
    tab.shot(f"form-marks-error-top-{tab.language}")


@pytest.fixture
def root(db):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(
        "root", password="root-pass-123", is_staff=True, is_superuser=True
    )


FORMS = [
    ("settings", "/settings/", "#id_max_resumes"),
    ("faults", "/settings/faults/", "#id_node"),
    ("inventory", "/settings/inventory/specs/new/", "#id_name"),
    ("cluster", "/settings/inventory/clusters/new/", "#id_name"),
]


def test_the_other_forms_mark_and_link_the_same_way(tab, root):
    """An admin's forms: the legend, the marks, and an emptied required field's error."""
    p = tab.page
    tab.log_in("root", "root-pass-123")
    p.wait_for_url(re.compile(r"/$"))
    for name, path, field_selector in FORMS:
        tab.goto(path)
        expect(p.locator("[data-testid=required-legend]")).to_be_visible()
        field = p.locator(field_selector)
        field_id = field_selector[1:]
        assert_required(p, field_id)
        if field.evaluate("element => element.tagName") == "SELECT":
            field.select_option("")
        else:
            field.fill("")
        p.locator("main form button[type=submit]").first.click()
        p.wait_for_selector(f"#{field_id}_error")
        tab.errors.clear()  # the refusal's 422
        expect(field).to_have_attribute("aria-invalid", "true")
        assert f"{field_id}_error" in field.get_attribute("aria-describedby").split()
        expect(p.locator(f"[data-testid=error-summary] a[href='#{field_id}']")).to_be_visible()
        tab.shot(f"form-marks-{name}-{tab.language}")
