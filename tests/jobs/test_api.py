"""The JSON API (SPEC I1) against the real database: tokens, the pages' permission matrix,
the form's refusals word for word (English and Chinese), rate limits, and the events."""

from __future__ import annotations

import itertools
import json
import time

import pytest
from django.core.cache import cache
from django.test import Client

from console import tokens
from console.models import ApiToken
from jobs.models import Job
from tests.jobs.factories import JobFactory
from tests.jobs.test_form import REFUSALS

NAMES = itertools.count()


def bearer(user, scope=ApiToken.Scope.WRITE) -> Client:
    _row, text = tokens.issue(user, f"t-{user.username}-{scope}-{next(NAMES)}", scope)
    return Client(HTTP_AUTHORIZATION=f"Bearer {text}")


def send(client: Client, data: dict, **headers):
    return client.post("/api/v1/jobs", json.dumps(data), content_type="application/json", **headers)


@pytest.fixture
def api(alice):
    return bearer(alice)


def test_a_job_made_through_the_api_is_the_form_s_job(api, alice, job_post, inventory):
    response = send(api, job_post(name="from-api"))
    assert response.status_code == 201, response.content
    body = response.json()
    job = Job.objects.get()
    assert (body["id"], body["name"], body["owner"], body["status"]) == (
        job.pk, "from-api", "alice", "queued",
    )  # fmt: skip
    assert body["specs"] == [inventory["cpu"].name]
    assert body["url"].endswith(f"/jobs/{job.pk}/")
    assert job.events.first().message == (
        "Submitted by alice through the API: waiting in the queue."
    )
    assert api.get(f"/api/v1/jobs/{job.pk}").json()["name"] == "from-api"
    events = api.get(f"/api/v1/jobs/{job.pk}/events").json()
    assert events[0]["message"].startswith("Submitted by alice through the API")
    assert events[0]["actor"] == "alice"


def test_choices_may_be_named_and_left_out_fields_take_the_form_s_defaults(
    api, job_post, inventory, catalog
):
    data = {
        "name": "named",
        "algorithm": catalog["algorithm"].name,
        "command": "python /workspace/algorithm/train.py",
        "specs": [inventory["cpu"].name],
        "image": inventory["image"].name,
    }
    response = send(api, data)
    assert response.status_code == 201, response.content
    job = Job.objects.get()
    assert (job.image_id, job.graceful_shutdown_seconds, job.nodes_asked, job.duration_hours) == (
        inventory["image"].pk, 30, 1, 24,
    )  # fmt: skip
    assert job.algorithm_id == catalog["algorithm"].pk and job.algorithm_read_only


@pytest.mark.parametrize(("overrides", "field", "message"), REFUSALS)
def test_the_api_refuses_what_the_form_refuses_in_its_words(
    client, alice, api, job_post, overrides, field, message
):
    client.force_login(alice)
    form = client.post("/jobs/new/", job_post(**overrides))
    expected = {f: list(m) for f, m in form.context["form"].errors.items()}
    response = send(api, job_post(**overrides))
    assert response.status_code == 422
    found = response.json()["errors"]
    assert found == expected
    assert message in " ".join(found[field])
    assert not Job.objects.exists()


def test_refusals_come_in_the_language_asked_for(client, alice, api, job_post):
    client.force_login(alice)
    client.cookies["django_language"] = "zh-hans"
    bad = job_post(command="", node_count="3")
    form = client.post("/jobs/new/", bad, HTTP_ACCEPT_LANGUAGE="zh-hans")
    expected = {f: list(m) for f, m in form.context["form"].errors.items()}
    response = send(api, bad, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.json()["errors"] == expected
    assert "请输入运行指令" in " ".join(response.json()["errors"]["command"])
    assert send(api, bad).json()["errors"]["command"] == ["Enter the command to run."]


def test_the_permission_matrix_is_the_pages(alice, bob, charlie, admin, vision):
    own = JobFactory(owner=alice, project=vision, others_access="none")
    shared = JobFactory(owner=alice, project=vision, others_access="read_only")
    as_bob, as_charlie, as_admin = bearer(bob), bearer(charlie), bearer(admin)
    assert as_bob.get(f"/api/v1/jobs/{own.pk}").status_code == 404  # may not see it
    assert as_charlie.get(f"/api/v1/jobs/{shared.pk}").status_code == 404  # another project
    assert as_bob.get(f"/api/v1/jobs/{shared.pk}").status_code == 200
    assert as_bob.post(f"/api/v1/jobs/{shared.pk}/stop").status_code == 403  # sees, may not
    assert as_bob.delete(f"/api/v1/jobs/{shared.pk}").status_code == 403
    listed = {j["id"] for j in as_bob.get("/api/v1/jobs").json()["jobs"]}
    assert listed == {shared.pk}
    assert {j["id"] for j in as_admin.get("/api/v1/jobs").json()["jobs"]} == {own.pk, shared.pk}
    assert as_admin.delete(f"/api/v1/jobs/{own.pk}").status_code == 204
    assert not Job.objects.filter(pk=own.pk).exists()


def test_a_read_only_token_reads_and_changes_nothing(alice, vision, job_post):
    job = JobFactory(owner=alice, project=vision)
    reader = bearer(alice, ApiToken.Scope.READ)
    assert reader.get(f"/api/v1/jobs/{job.pk}").status_code == 200
    for response in (
        reader.post(f"/api/v1/jobs/{job.pk}/stop"),
        reader.delete(f"/api/v1/jobs/{job.pk}"),
        send(reader, job_post(name="nope")),
    ):
        assert response.status_code == 403
        assert "read-only" in response.json()["detail"]
    assert Job.objects.count() == 1


def test_tokens_that_no_longer_hold_and_other_ways_in_are_refused(alice, vision, client):
    job = JobFactory(owner=alice, project=vision)
    row, text = tokens.issue(alice, "old", ApiToken.Scope.WRITE)
    good = Client(HTTP_AUTHORIZATION=f"Bearer {text}")
    assert good.get("/api/v1/me").json()["username"] == "alice"
    row.refresh_from_db()
    assert row.last_used_at is not None
    # A token never signs anyone in to the pages.
    assert good.get("/jobs/").status_code == 302
    tokens.revoke(row, alice)
    assert good.get("/api/v1/me").status_code == 401
    for header in (
        "Bearer",
        f"Bearer {text}x",
        "Bearer tc_",
        f"Token {text}",
        "Bearer " + "x" * 300,
    ):
        assert Client(HTTP_AUTHORIZATION=header).get("/api/v1/jobs").status_code == 401, header
    # A signed-in browser reads; its writes need the CSRF token, as a form's do.
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)
    assert browser.get(f"/api/v1/jobs/{job.pk}").status_code == 200
    assert browser.post(f"/api/v1/jobs/{job.pk}/stop").status_code in (401, 403)
    job.refresh_from_db()
    assert job.status == "queued"


def test_an_expired_token_or_an_inactive_user_gets_nothing(alice):
    from datetime import timedelta

    from django.utils import timezone

    _row, text = tokens.issue(alice, "past", "read", timezone.now() - timedelta(seconds=1))
    assert Client(HTTP_AUTHORIZATION=f"Bearer {text}").get("/api/v1/me").status_code == 401
    _row, text = tokens.issue(alice, "now", "read")
    alice.is_active = False
    alice.save()
    assert Client(HTTP_AUTHORIZATION=f"Bearer {text}").get("/api/v1/me").status_code == 401


def test_submissions_share_the_form_s_rate_limit(api, job_post, settings, monkeypatch):
    from types import SimpleNamespace

    from console import ratelimit

    # One window (console.ratelimit's are fixed): the limiter's clock stands still.
    still = (time.time() // 3600) * 3600 + 10
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: still))
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "submit": (2, 60)}
    assert send(api, job_post(name="one")).status_code == 201
    assert send(api, job_post(name="two")).status_code == 201
    refused = send(api, job_post(name="three"))
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 60
    assert Job.objects.count() == 2


def test_the_list_pages_by_key_and_searches_as_jobs_does(api, alice, vision):
    for i in range(5):
        JobFactory(owner=alice, project=vision, name=f"sweep-{i}")
    JobFactory(owner=alice, project=vision, name="other")
    first = api.get("/api/v1/jobs", {"name": "sweep", "per_page": 2, "sort": "name"}).json()
    assert [j["name"] for j in first["jobs"]] == ["sweep-0", "sweep-1"]
    assert first["total"] == 5 and first["previous"] is None
    second = api.get(first["next"]).json()
    assert [j["name"] for j in second["jobs"]] == ["sweep-2", "sweep-3"]
    assert api.get("/api/v1/jobs", {"status": "nonsense"}).status_code == 422


def test_the_openapi_document_and_its_page(client, alice, api):
    schema = api.get("/api/v1/openapi.json").json()
    assert {"/api/v1/jobs", "/api/v1/jobs/{job_id}", "/api/v1/me"} <= set(schema["paths"])
    client.force_login(alice)
    page = client.get("/api/v1/docs/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "/api/v1/jobs/{job_id}/stop" in page and "graceful_shutdown_seconds" in page


def test_the_form_exports_what_was_typed_as_job_yaml_the_api_takes(
    client, alice, api, job_post, inventory, catalog
):
    import yaml

    client.force_login(alice)
    typed = job_post(name="typed", priority="1", graceful_shutdown_seconds="45")
    response = client.post("/jobs/new/export/", typed)
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="typed.yaml"'
    text = response.content.decode()
    assert text.startswith("# A training job")
    fields = yaml.safe_load(text)
    assert fields["specs"] == [inventory["cpu"].name] and fields["image"] == "pytorch"
    assert fields["algorithm"] == catalog["algorithm"].name and fields["priority"] == 1
    assert fields["graceful_shutdown_seconds"] == 45 and "ps_count" not in fields  # a default
    assert not Job.objects.exists()  # nothing made
    made = send(api, fields)
    assert made.status_code == 201, made.content
    job = Job.objects.get()
    assert (job.priority, job.graceful_shutdown_seconds, job.command) == (
        1, 45, typed["command"],
    )  # fmt: skip
    again = yaml.safe_load(api.get(f"/api/v1/jobs/{job.pk}/yaml").content)
    assert again == fields


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN"])
def test_a_choice_given_as_a_non_finite_number_is_refused(api, job_post, inventory, value):
    """Python's JSON reads Infinity and NaN; as a choice's id they are a bad id (found by
    the test below: an infinite float overflowed the database's integer)."""
    body = json.dumps({**job_post(name="inf")})[:-1] + f', "algorithm": {value}}}'
    answer = api.post("/api/v1/jobs", body, content_type="application/json")
    assert answer.status_code == 422, answer.content[:300]
    assert not Job.objects.exists()


def test_any_json_body_gets_an_answer_never_a_5xx(api, job_post, inventory):
    """Hypothesis: job bodies with any JSON in any of the form's fields (and others), and
    bodies that are not mappings at all: 201, 400 or 422, never a 5xx, nothing half made."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from jobs.forms.job import JobForm

    # What JSON can carry and a form post cannot: NUL, a lone surrogate.
    odd = st.sampled_from(("\x00", "a\x00b", "\ud800", "x\udfff", "9" * 30, "-1", "²"))
    leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50) | odd
    values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                          max_leaves=6)  # fmt: skip
    names = st.sampled_from((*JobForm.base_fields, "project", "dataset_count", "x"))

    @settings(max_examples=200, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
    @given(changes=st.dictionaries(names, values, max_size=4), raw=st.none() | values)
    def check(changes, raw):
        body = raw if raw is not None else {**job_post(name="h"), **changes}
        answer = api.post("/api/v1/jobs", json.dumps(body), content_type="application/json")
        assert answer.status_code in (201, 400, 422), (body, answer.content[:300])
        if answer.status_code == 201:
            Job.objects.filter(pk=answer.json()["id"]).delete()
        else:
            assert not Job.objects.exists()

    cache.clear()
    from django.test import override_settings

    with override_settings(RATE_LIMITS={"submit": (10_000, 60), "job_change": (10_000, 60)}):
        check()
