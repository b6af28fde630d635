"""Real concurrent requests against the live server: the urgent cap (SPEC Q4) holds when
submits and priority changes race for its last places, and identical submits make one job.
Every loser gets a clear answer; none gets a 5xx."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.servers.basehttp import ThreadedWSGIServer
from django.test.testcases import LiveServerThread

from console import limits
from console.celery import app
from jobs import hooks
from jobs.models import Job, Priority
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.usefixtures("transactional_db")

CAP = 5
RACERS = 8


@pytest.fixture(autouse=True)
def _queue_stays(monkeypatch):
    # A Celery worker an earlier test started may still run in this process: no admission
    # pass may start (and end) the racing jobs, which would free places under the cap.
    monkeypatch.setattr(hooks, "queue_listeners", [])
    app.control.purge()  # and none an earlier test left in the queue


def race(calls: list) -> list:
    """Run ``calls`` in threads released at the same moment; their results, in order."""
    barrier = threading.Barrier(len(calls))

    def run(call):
        barrier.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def test_the_live_server_answers_requests_concurrently():
    # Otherwise the races below could never happen and the tests would prove nothing.
    assert LiveServerThread.server_class is ThreadedWSGIServer


def test_the_urgent_cap_holds_when_submits_and_changes_race(
    http, alice, vision, admin, job_post, inventory
):
    limits.save({"urgent_jobs_per_project": CAP}, admin)
    queued = [
        JobFactory(owner=alice, project=vision, specs=[inventory["cpu"]]) for _ in range(RACERS)
    ]
    submitters = [http(alice) for _ in range(RACERS)]
    changers = [http(alice) for _ in range(RACERS)]

    def submit(session, i):
        data = job_post(name=f"urgent-{i}", priority=str(Priority.URGENT))
        return lambda: session.post("/jobs/new/", data, allow_redirects=False)

    def change(session, job):
        url = f"/jobs/{job.pk}/priority/"
        return lambda: session.post(url, {"priority": Priority.URGENT}, allow_redirects=False)

    answers = race(
        [submit(s, i) for i, s in enumerate(submitters)]
        + [change(s, job) for s, job in zip(changers, queued, strict=True)]
    )

    assert [a.status_code for a in answers if a.status_code >= 500] == []
    urgent = Job.objects.live().filter(project=vision, priority=Priority.URGENT)
    assert urgent.count() == CAP
    created = [a for a in answers[:RACERS] if a.status_code == 302]
    refused = [a for a in answers[:RACERS] if a.status_code != 302]
    assert len(created) == urgent.exclude(pk__in=[j.pk for j in queued]).count()
    for answer in refused:  # the form as typed, the reason on the priority field
        assert answer.status_code == 422
        body = answer.text
        assert "the cap is 5" in body and 'id="id_priority"' in body
        assert "python /workspace/algorithm/train.py" in body
    changed = urgent.filter(pk__in=[j.pk for j in queued]).count()
    for session, answer in zip(changers, answers[RACERS:], strict=True):
        assert answer.status_code == 302
        page = session.get(answer.headers["Location"]).text
        assert ("the cap is 5" in page) != ("Priority is now Urgent" in page)
    assert changed + len(created) == CAP


def test_identical_concurrent_submits_make_one_job(http, alice, vision, job_post):
    sessions = [http(alice) for _ in range(RACERS)]
    data = job_post(name="same-job", command="python /workspace/algorithm/typed.py")
    answers = race(
        [lambda s=s: s.post("/jobs/new/", data, allow_redirects=False) for s in sessions]
    )

    assert [a.status_code for a in answers if a.status_code >= 500] == []
    job = Job.objects.get()
    assert sorted(a.status_code for a in answers) == [302] + [422] * (RACERS - 1)
    for answer in answers:
        if answer.status_code == 422:  # what was typed is still there, with the way to the job
            assert "python /workspace/algorithm/typed.py" in answer.text
            assert "Already submitted" in answer.text and f'href="/jobs/{job.pk}/"' in answer.text
