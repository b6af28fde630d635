"""A new user's first TensorFlow job in Chromium: picking the demo's tf-sample fills the
command and shows what it suggests; "Use these settings" sets mode, image and nodes, and the
form shows TensorFlow's own field. In English and Chinese, on a wide and a phone screen."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from resources.models import Image
from tests.browser.conftest import logged_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TF_COMMAND = "python /workspace/algorithm/train.py --steps 20"
WIDE, PHONE = {"width": 1280, "height": 800}, {"width": 390, "height": 844}


def take_tf_samples_launch(page, shot: str) -> None:
    p = page.page
    page.goto("/jobs/new/")
    p.fill("#id_name", "first-tf")
    p.select_option("#id_algorithm", label="tf-sample")
    suggestion = p.locator("[data-testid=suggestion]")
    expect(suggestion).to_contain_text("tf-sample")
    expect(suggestion).to_contain_text("tensorflow-2")
    # Picked with the command empty: filled at once, the rest waits for the button.
    expect(p.locator("#id_command")).to_have_value(TF_COMMAND)
    expect(p.locator("#id_mode")).to_have_value("single")
    expect(p.locator("#id_ps_count")).to_have_count(0)
    shoot(page, shot)
    p.set_viewport_size(PHONE)
    shoot(page, f"{shot}-phone")
    p.set_viewport_size(WIDE)
    suggestion.locator("button[value=use_suggestion]").click()
    expect(p.locator("[data-testid=suggestion-in-use]")).to_be_visible()
    image = Image.objects.get(name="tensorflow-2")
    expect(p.locator("#id_mode")).to_have_value("tensorflow")
    expect(p.locator("#id_image")).to_have_value(str(image.pk))
    expect(p.locator("#id_node_count")).to_have_value("2")
    expect(p.locator("#id_command")).to_have_value(TF_COMMAND)
    expect(p.locator("#id_ps_count")).to_be_visible()  # TensorFlow's own field
    expect(p.locator("#id_name")).to_have_value("first-tf")  # the rest as typed


def shoot(page, name: str) -> None:
    """The whole page, and the Code section alone (where the box is) to read it closely."""
    page.shot(name)
    page.shot(f"{name}-code", "section[aria-labelledby=code-heading]")


def test_tf_samples_suggested_launch_in_english_and_chinese(page, demo):
    p = page.page
    logged_in(page, get_user_model().objects.get(username="alice"))
    take_tf_samples_launch(page, "job-form-suggestion-offered")
    shoot(page, "job-form-suggestion")
    p.set_viewport_size(PHONE)
    shoot(page, "job-form-suggestion-phone")

    p.set_viewport_size(WIDE)
    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    expect(p.locator("html")).to_have_attribute("lang", "zh-hans")
    take_tf_samples_launch(page, "job-form-suggestion-offered-zh")
    shoot(page, "job-form-suggestion-zh")
    p.set_viewport_size(PHONE)
    shoot(page, "job-form-suggestion-phone-zh")


def test_the_catalog_shows_and_edits_the_suggested_launch(page, demo):
    from resources.models import Algorithm

    p = page.page
    tf = Algorithm.objects.get(name="tf-sample")
    logged_in(page, get_user_model().objects.get(username="alice"))
    page.goto(tf.get_absolute_url())
    launch = p.locator("[data-testid=suggested-launch]")
    expect(launch.locator("[data-testid=suggested-mode]")).to_have_text("TensorFlow")
    expect(launch.locator("[data-testid=suggested-command]")).to_have_text(TF_COMMAND)
    expect(p.locator("[data-testid=actions]")).not_to_contain_text("Edit")  # the admin's
    page.shot("catalog-algorithm-suggested-launch")

    logged_in(page, get_user_model().objects.get(username="admin"))
    page.goto(f"/catalog/algorithms/{tf.pk}/edit/")
    p.fill("#id_suggested_nodes", "0")
    p.click("[data-testid=catalog-form] button[type=submit]")
    expect(p.locator("#id_suggested_nodes_error")).to_be_visible()
    expect(p.locator("#id_suggested_command")).to_have_value(TF_COMMAND)
    page.errors.clear()  # the 422 answer is logged as a console error
    page.shot("catalog-algorithm-edit-launch")

    # A command the job form would refuse is refused here, with the job form's fix to paste.
    p.fill("#id_suggested_nodes", "2")
    p.fill("#id_suggested_command", "cd /workspace/algorithm && python train.py")
    p.click("[data-testid=catalog-form] button[type=submit]")
    error = p.locator("#id_suggested_command_error")
    expect(error).to_contain_text('bash -c "cd /workspace/algorithm && python train.py"')
    expect(p.locator("#id_suggested_command")).to_have_value(
        "cd /workspace/algorithm && python train.py"
    )
    page.errors.clear()
    page.shot("catalog-algorithm-edit-command")
    p.click("button[aria-label=Language]")
    p.click("[data-testid=language-switcher] >> text=简体中文")
    expect(p.locator("html")).to_have_attribute("lang", "zh-hans")
    p.fill("#id_suggested_command", "cd /workspace/algorithm && python train.py")
    p.click("[data-testid=catalog-form] button[type=submit]")
    expect(p.locator("#id_suggested_command_error")).to_contain_text("用于连接或重定向命令")
    page.errors.clear()
    page.shot("catalog-algorithm-edit-command-zh")
