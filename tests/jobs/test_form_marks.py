"""The job form marks what it requires, with the fields its rules require only for some
choices (batch sub-tasks, checkpoint resume), and links each error to its field."""

from __future__ import annotations

import pytest

from tests.form_page import Page, legend_count

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_alice(client, alice):
    client.force_login(alice)
    return client


class TestJobForm:
    def test_marks_what_a_regular_job_requires(self, as_alice, inventory, catalog):
        html = as_alice.get("/jobs/new/").content.decode()
        page = Page(html)
        assert legend_count(html) == 1
        for field in ("name", "priority", "algorithm", "command", "mode", "node_count",
                      "image", "graceful_shutdown_seconds", "duration_hours"):  # fmt: skip
            assert page.required(f"id_{field}"), field
        for field in ("output_path", "node_names", "driver_version", "pool", "annotations",
                      "lifecycle_before_start", "lifecycle_on_failure", "hang_policy"):  # fmt: skip
            assert not page.required(f"id_{field}"), field
        # Groups: the legend carries the mark; radios say it as a radiogroup.
        assert html.count('role="radiogroup" aria-required="true"') == 2  # type, access
        specs = html.split('data-testid="spec-choices"', 1)[1].split("</legend>", 1)[0]
        assert "required-mark" in specs and "visually-hidden" in specs

    def test_marks_follow_the_choices_that_require_more(self, as_alice, job_post):
        data = job_post(job_type="batch", subtask_count="2", resume_enabled="on",
                        elastic="on", dataset_count="1")  # fmt: skip
        page = Page(as_alice.post("/jobs/new/refresh/", data).content.decode())
        for field in ("subtask_0_algorithm", "subtask_1_command", "dataset_0_version",
                      "pool", "max_resumes", "elastic_min_nodes"):  # fmt: skip
            assert page.required(f"id_{field}"), field
        assert "id_algorithm" not in page.by_id  # batch: per sub-task
        assert not page.required("id_subtask_0_algorithm_read_only")

    def test_an_empty_required_field_is_linked_to_its_error(self, as_alice, job_post):
        response = as_alice.post("/jobs/new/", job_post(name="", command=""))
        assert response.status_code == 422
        page = Page(response.content.decode())
        page.assert_linked_error("id_name", "This field is required.")
        page.assert_linked_error("id_command", "Enter the command to run.")
        assert page.by_id["id_name"].get("value") is None
        assert page.by_id["error-summary"]["role"] == "alert"

    def test_a_group_error_links_to_its_first_option(self, as_alice, job_post):
        response = as_alice.post("/jobs/new/", job_post(specs=None))
        page = Page(response.content.decode())
        assert "id_specs_0" in page.links
        assert 'aria-describedby="id_specs_error id_specs_helptext"' in page.html
