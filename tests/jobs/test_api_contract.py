"""The API's contract (SPEC I1): every operation of its OpenAPI document, called as each
role of the permission matrix, answers without a 5xx and with the status SPEC P gives that
role: the owner and an admin may read and change, a member the job is shared read-write
with too, a member or the project's lead it is shared read-only with may read (403 on a
change), an outsider gets 404, a read-only token 403 on any change, anonymous 401."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from console import tokens
from console.models import ApiToken
from tests.jobs.factories import JobFactory

READS = {"get"}
# What each role gets for an operation on alice's job, shared read-only with her project
# (read-write for the writer).
EXPECTED = {
    "owner": {"read": {200}, "change": {200, 201, 204, 409, 422}},
    "admin": {"read": {200}, "change": {200, 201, 204, 409, 422}},
    "member": {"read": {200}, "change": {403}},
    "lead": {"read": {200}, "change": {403}},
    "writer": {"read": {200}, "change": {200, 201, 204, 409, 422}},
    "reader": {"read": {200}, "change": {403}},
    "outsider": {"read": {404}, "change": {404}},
    "anonymous": {"read": {401}, "change": {401}},
}
# Creating, cloning and predicting: a member may (their own job), a read-only token may not.
ON_THEIR_OWN = {"/api/v1/jobs", "/api/v1/queue/predict"}
BODIES = {"priority": {"priority": 0}, "duration": {"hours": 2}}


def operations(schema: dict):
    for path, item in schema["paths"].items():
        for method in item:
            yield method, path


def role_clients(alice, bob, charlie, admin, lead) -> dict[str, Client]:
    def bearer(user, scope="write"):
        _row, text = tokens.issue(user, f"contract-{scope}", scope)
        return Client(HTTP_AUTHORIZATION=f"Bearer {text}")

    return {
        "owner": bearer(alice), "admin": bearer(admin), "member": bearer(bob),
        "lead": bearer(lead), "writer": Client(HTTP_AUTHORIZATION=bob_rw(bob)),
        "reader": bearer(alice, ApiToken.Scope.READ), "outsider": bearer(charlie),
        "anonymous": Client(),
    }  # fmt: skip


def bob_rw(bob) -> str:
    _row, text = tokens.issue(bob, "contract-rw", "write")
    return f"Bearer {text}"


def call(client: Client, method: str, path: str, job_post):
    body = BODIES.get(path.rsplit("/", 1)[-1], {})
    if path in ON_THEIR_OWN or path.endswith("/clone"):
        body = job_post(name=f"c-{abs(hash((method, path))) % 10**6}")
    if method == "get":
        return client.get(path)
    if method == "delete":
        return client.delete(path)
    return client.post(path, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("role", list(EXPECTED))
def test_every_operation_answers_each_role_as_the_matrix_says(
    role, alice, bob, charlie, admin, lead, vision, job_post
):
    clients = role_clients(alice, bob, charlie, admin, lead)
    access = "read_write" if role == "writer" else "read_only"
    schema = clients["owner"].get("/api/v1/openapi.json").json()
    seen = []
    # Deleting last: the other operations need the job.
    ordered = sorted(operations(schema), key=lambda op: op[0] == "delete")
    for method, template in ordered:
        job = JobFactory(owner=alice, project=vision, others_access=access)
        path = re.sub(r"\{job_id\}", str(job.pk), template).replace("{kind}", "datasets")
        answer = call(clients[role], method, path, job_post)
        assert answer.status_code < 500, (role, method, path, answer.content[:300])
        seen.append((method, template))
        if "{job_id}" not in template:
            if role == "anonymous":
                assert answer.status_code == 401, (method, path)
            elif method == "post" and role == "reader" and template == "/api/v1/jobs":
                assert answer.status_code == 403, (method, path)  # creating is a change
            elif role == "outsider" and template == "/api/v1/jobs" and method == "post":
                # Alice's algorithm is not Charlie's to run: the form's refusal, on its field.
                assert answer.status_code == 422 and "algorithm" in answer.json()["errors"]
            elif role != "anonymous":
                assert answer.status_code in (200, 201), (role, method, path, answer.content)
            continue
        kind = "read" if method in READS else "change"
        if kind == "change" and template.endswith("/clone") and role in ("member", "lead"):
            expected = {201}  # a job one may see may be cloned as one's own
        else:
            expected = EXPECTED[role][kind]
        assert answer.status_code in expected, (role, method, path, answer.content[:300])
    assert len(seen) >= 15
