"""The API's job changes, queue, prediction and logs (SPEC I1), with real processes on the
local backend where a job runs: each answer is the page's own."""

from __future__ import annotations

import json

import pytest

from jobs.models import Job, Phase
from tests.jobs.execution_helpers import admit_and_launch, make_job, program, wait_for_phase
from tests.jobs.factories import JobFactory
from tests.jobs.test_api import bearer, send


def post(client, path: str, body: dict):
    return client.post(path, json.dumps(body), content_type="application/json")


@pytest.mark.usefixtures("local_runs")
def test_a_log_is_followed_from_its_offsets_to_the_end(
    transactional_db, alice, vision, run_cluster
):
    job = make_job(alice, vision, run_cluster["cpu"], command="python3 /workspace/algorithm/say.py")
    program(job, "say.py", "import time\nfor i in range(3):\n    print('step', i, flush=True)\n"
                           "    time.sleep(0.5)\n")  # fmt: skip
    admit_and_launch()
    api = bearer(alice)
    text, offset = "", 0
    for _ in range(200):
        answer = api.get(f"/api/v1/jobs/{job.pk}/logs", {"offset": offset}).json()
        assert answer["offset"] >= offset
        text += answer["text"]
        offset = answer["offset"]
        if not answer["live"] and not answer["more"]:
            break
        wait_for_phase(job, Phase.RUNNING, Phase.SUCCEEDED, timeout=30)
    assert [line for line in text.splitlines() if line.startswith("step")] == [
        "step 0", "step 1", "step 2",
    ]  # fmt: skip
    assert answer["attempt"] == 1 and answer["replica"] in answer["replicas"]
    wait_for_phase(job, Phase.SUCCEEDED)
    assert api.get(f"/api/v1/jobs/{job.pk}/logs", {"offset": 10**9}).json()["text"] == ""
    assert api.get(f"/api/v1/jobs/{job.pk}/logs", {"replica": "nope"}).status_code == 404
    assert api.get(f"/api/v1/jobs/{job.pk}/logs", {"attempt": "x"}).status_code == 404
    usage = api.get(f"/api/v1/jobs/{job.pk}/usage").json()
    assert usage["attempt"] == 1


def test_priority_duration_and_clone_follow_the_buttons_rules(alice, bob, vision, job_post, admin):
    api = bearer(alice)
    made = send(api, job_post(name="base")).json()
    answer = post(api, f"/api/v1/jobs/{made['id']}/priority", {"priority": 2})
    assert answer.status_code == 409 and "Only platform admins" in answer.json()["detail"]
    assert post(api, f"/api/v1/jobs/{made['id']}/priority", {"priority": 1}).json()["priority"] == 1
    assert post(api, f"/api/v1/jobs/{made['id']}/priority", {"priority": "x"}).status_code == 422
    duration = post(api, f"/api/v1/jobs/{made['id']}/duration", {"hours": 5})
    assert duration.status_code == 409  # only a running job's
    copy = post(api, f"/api/v1/jobs/{made['id']}/clone", {})
    assert copy.status_code == 201 and copy.json()["name"] == "base-copy"
    assert Job.objects.get(pk=copy.json()["id"]).cloned_from_id == made["id"]
    renamed = post(api, f"/api/v1/jobs/{made['id']}/clone", {"name": "base-2", "priority": 0})
    assert renamed.json()["name"] == "base-2" and renamed.json()["priority"] == 0
    refused = post(api, f"/api/v1/jobs/{made['id']}/clone", {"name": "Bad_Name"})
    assert refused.status_code == 422 and "lowercase letters" in refused.json()["errors"]["name"][0]
    # Bob sees none of alice's private jobs: 404, not 403.
    assert post(bearer(bob), f"/api/v1/jobs/{made['id']}/clone", {}).status_code == 404


def test_the_queue_and_a_draft_s_place_in_it(alice, bob, vision, job_post, inventory):
    api = bearer(alice)
    for name in ("q-1", "q-2"):
        assert send(api, job_post(name=name)).status_code == 201
    JobFactory(owner=bob, project=vision, name="bobs", others_access="none")
    queue = api.get("/api/v1/queue").json()
    assert [j["name"] for j in queue["jobs"]] == ["q-1", "q-2"]
    assert queue["total"] == 2 and queue["hidden"] == 1  # bob's counts in the places
    assert api.get("/api/v1/queue", {"mine": "true"}).json()["total"] == 2
    assert api.get("/api/v1/queue", {"project": "nope"}).status_code == 422
    answer = post(api, "/api/v1/queue/predict", job_post(name="draft"))
    assert answer.status_code == 200, answer.content
    forecast = answer.json()
    assert forecast["refused"] is None and forecast["spec"] == inventory["cpu"].name
    assert forecast["queue_length"] >= 1 and forecast["as_of"]
    assert not Job.objects.filter(name="draft").exists()
    bad = post(api, "/api/v1/queue/predict", job_post(node_count="99"))
    assert bad.status_code == 422 and "node_count" in bad.json()["errors"]
