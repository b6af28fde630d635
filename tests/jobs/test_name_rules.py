"""The names a user types for jobs and development environments: a field error and a
422 page that keeps what was typed, never a 500 or a silent change."""

from __future__ import annotations

import html

import pytest

from console import names
from jobs.models import DevEnvironment, Job
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.django_db

BAD = {
    "over-long": "a" * 307,
    "space": "my job",
    "slash": "team/job",
    "unicode": "jöb",
    "nul": "bad\0job",
    "uppercase": "Train",
}


@pytest.mark.parametrize("case", list(BAD))
def test_job_names(client, alice, vision, job_post, case):
    client.force_login(alice)
    response = client.post("/jobs/new/", job_post(name=BAD[case]))
    assert response.status_code == 422
    assert response.context["form"].errors["name"]
    assert not Job.objects.filter(owner=alice).exists()


class TestDevEnvironmentName:
    @pytest.fixture
    def job(self, client, alice, vision):
        client.force_login(alice)
        return JobFactory(owner=alice, project=vision, name="resnet")

    @pytest.mark.parametrize("case", list(BAD))
    def test_a_bad_name_is_a_field_error(self, client, job, case):
        typed = BAD[case]
        response = client.post(f"/jobs/{job.pk}/devenv/", {"name": typed})
        assert response.status_code == 422
        content = response.content.decode()
        message = names.DNS_LABEL.problem("")
        assert f'id="devenv-name-error">{html.escape(message)}</div>' in content
        assert 'class="form-control is-invalid"' in content
        if "\0" not in typed:
            assert f'value="{html.escape(typed)}"' in content
        assert not DevEnvironment.objects.exists()

    def test_forty_characters_are_kept_whole(self, client, job):
        name = "a" * 40
        assert client.post(f"/jobs/{job.pk}/devenv/", {"name": name}).status_code == 302
        assert DevEnvironment.objects.get().name == name

    def test_an_empty_name_takes_the_suggestion(self, client, job):
        assert client.post(f"/jobs/{job.pk}/devenv/", {"name": "  "}).status_code == 302
        assert DevEnvironment.objects.get().name == "resnet-dev"

    def test_the_suggestion_fits_for_a_long_job_name(self, client, alice, vision):
        job = JobFactory(owner=alice, project=vision, name="j" * 40)
        client.force_login(alice)
        page = client.get(f"/jobs/{job.pk}/devenv/").content.decode()
        suggested = "j" * 36 + "-dev"
        assert f'value="{suggested}"' in page
        assert names.DNS_LABEL.problem(suggested) is None
