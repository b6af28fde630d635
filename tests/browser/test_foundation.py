"""The foundation's pages as a person sees them, in English and Chinese."""

import re

import pytest
from playwright.sync_api import expect

from console import limits

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_login_then_dashboard(page, alice, password):
    page.goto("/login/")
    page.shot("login")
    page.log_in("alice", password)
    page.page.wait_for_url(re.compile(r"/$"))
    expect(page.page.get_by_role("heading", name="Your projects")).to_be_visible()
    expect(page.page.get_by_role("link", name="Vision")).to_be_visible()
    page.shot("dashboard")


def test_wrong_password_keeps_the_username(page, alice):
    page.log_in("alice", "wrong")
    expect(page.page.locator(".alert-danger")).to_be_visible()
    assert page.page.input_value("#id_username") == "alice"
    page.shot("login-error")


def test_admin_fixes_a_bad_setting(page, admin, password):
    page.log_in("admin", password)
    page.page.wait_for_url(re.compile(r"/$"))
    page.goto("/settings/")
    page.shot("settings")
    page.page.fill("#id_max_resumes", "500")
    page.page.fill("#id_durations_hours", "1, 2, 48")
    page.page.click("text=Save settings")
    expect(page.page.locator("#id_max_resumes.is-invalid")).to_be_visible()
    # What was typed is still there, the valid field included.
    assert page.page.input_value("#id_durations_hours") == "1, 2, 48"
    page.shot("settings-error")
    page.errors.clear()  # the 422 reply is logged by Chromium as a failed resource
    page.page.fill("#id_max_resumes", "6")
    page.page.select_option("#id_idle_policy", "stop")  # a choice of one (SPEC G5)
    page.page.click("text=Save settings")
    expect(page.page.locator(".alert-success")).to_be_visible()
    assert page.page.input_value("#id_idle_policy") == "stop"
    page.page.locator("#id_idle_policy").scroll_into_view_if_needed()
    page.shot("settings-idle")
    assert limits.current().max_resumes == 6
    assert limits.current().durations_hours == [1, 2, 48]
    assert limits.current().idle_policy == "stop"
    assert page.page.locator("[data-testid=settings-history] li").count() == 3
    page.shot("settings-saved")


def test_member_gets_the_403_page(page, alice, password):
    page.log_in("alice", password)
    page.page.wait_for_url(re.compile(r"/$"))
    page.goto("/settings/")
    expect(page.page.get_by_role("heading", name="You may not do this")).to_be_visible()
    page.errors.clear()
    page.shot("forbidden")


def test_switch_language_and_project(page, alice, speech, password):
    from tests.factories import MembershipFactory

    MembershipFactory(project=speech, user=alice)
    page.log_in("alice", password)
    page.page.wait_for_url(re.compile(r"/$"))
    page.page.click("[data-testid=project-switcher] > button")
    page.page.click("[data-testid=project-switcher] >> text=Speech")
    expect(page.page.get_by_text("Working in Speech")).to_be_visible()
    page.page.click("button[aria-label=Language]")
    page.page.click("[data-testid=language-switcher] >> text=简体中文")
    expect(page.page.get_by_role("heading", name="我的项目")).to_be_visible()
    page.shot("dashboard-zh")
