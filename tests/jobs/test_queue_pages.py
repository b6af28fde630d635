"""/queue/ a page at a time, by key (issue of the 30,000-job queue): 50 rows a page, every
waiting job on exactly one page whichever way the pages are walked, a user's own job found
at once, bad page addresses answered with the nearest page, and the same queries whatever
the page."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.models import Job, JobPrediction, Phase, Standing
from jobs.views.queue_pages import PAGE_SIZE
from tests.jobs.factories import JobFactory
from tests.resources.factories import NodeSpecFactory

pytestmark = pytest.mark.django_db

PLACED = 110
UNPLACED = 10
ROW = re.compile(r'<tr data-job="([^"]+)"')
LINK = re.compile(r'<a class="page-link" href="\?([^"]*)">([^<]+)</a>')


@pytest.fixture
def queue(alice, bob, vision):
    """110 jobs placed by a pass (positions 1..110, alice's and bob's taking turns, created
    in an order unlike their positions) and 10 no pass has placed yet."""
    spec = NodeSpecFactory()
    jobs = []
    for i in range(PLACED + UNPLACED):
        owner = alice if i % 2 else bob
        jobs.append(JobFactory(owner=owner, project=vision, specs=[spec], name=f"q{i:03d}"))
    for job in jobs[:PLACED]:
        # Positions in the reverse of the ids: the order is the position's, not the id's.
        Standing.objects.filter(job=job).update(position=PLACED - int(job.name[1:]))
    return jobs


def expected_order(jobs) -> list[str]:
    placed = sorted(jobs[:PLACED], key=lambda job: PLACED - int(job.name[1:]))
    return [job.name for job in placed] + [job.name for job in jobs[PLACED:]]


def rows(client, query: str = "") -> tuple[list[str], dict[str, str], str]:
    body = client.get(f"/queue/?{query}").content.decode()
    links = {label.strip(): href.replace("&amp;", "&") for href, label in LINK.findall(body)}
    return ROW.findall(body), links, " ".join(body.split())


def test_walking_forward_then_back_shows_every_job_once_in_order(client, admin, queue):
    client.force_login(admin)
    order = expected_order(queue)
    seen, query, pages = [], "", 0
    while True:
        names, links, body = rows(client, query)
        pages += 1
        assert len(names) == min(PAGE_SIZE, len(order) - len(seen))
        assert f"{len(seen) + 1}–{len(seen) + len(names)} of {len(order)}" in body
        seen += names
        if "Next ›" not in links:
            break
        query = links["Next ›"]
    assert seen == order and pages == 3
    _names, links, _ = rows(client)
    back, links = [], {"‹ Previous": links["Last »"]}
    while "‹ Previous" in links:
        names, links, _ = rows(client, links["‹ Previous"])
        back = names + back
    assert back == order


def test_the_last_page_is_full_and_ends_with_the_unplaced_jobs(client, admin, queue):
    client.force_login(admin)
    names, links, body = rows(client)
    names, links, body = rows(client, links["Last »"])
    order = expected_order(queue)
    assert names == order[-PAGE_SIZE:]
    assert f"{len(order) - PAGE_SIZE + 1}–{len(order)} of {len(order)}" in body
    assert "Next ›" not in links and "« First" in links


def test_a_users_own_job_is_found_at_once(client, alice, queue):
    client.force_login(alice)
    order = expected_order(queue)
    first_own = next(name for name in order if int(name[1:]) % 2)
    job = Job.objects.get(name=first_own)
    _names, _links, body = rows(client)
    assert f"Your first waiting job, {first_own}, is number {job.queue_position}." in body
    names, links, body = rows(client, f"at={job.pk}")
    assert names[0] == first_own
    assert f'data-job="{first_own}" class="table-primary" aria-current="true"' in body
    assert "‹ Previous" in links or order[0] == first_own


def test_only_mine_lists_the_users_jobs_and_keeps_the_filter_across_pages(client, alice, queue):
    client.force_login(alice)
    names, links, body = rows(client, "mine=1")
    own = [name for name in expected_order(queue) if int(name[1:]) % 2]
    assert names == own[:PAGE_SIZE]
    assert f"1–{PAGE_SIZE} of {len(own)}" in body
    more, _links, _ = rows(client, links["Next ›"])
    assert "mine=1" in links["Next ›"] and more == own[PAGE_SIZE:]


def test_a_member_sees_only_jobs_shared_with_them_and_is_told_of_the_rest(client, vision, queue):
    from tests.factories import MembershipFactory, UserFactory

    carol = MembershipFactory(project=vision, user=UserFactory(username="carol")).user
    JobFactory(owner=carol, project=vision, name="carols")
    client.force_login(carol)
    names, _links, body = rows(client)
    assert names == ["carols"]
    assert f"{PLACED + UNPLACED} more queued jobs are not shared with you" in body


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("after=nonsense", 0),
        ("before=nonsense", 0),
        ("after=9999999999-1", "last"),  # past the end: the last page
        ("before=0-0", 0),  # before the start: the first page
        ("at=999999999999", 0),  # no such job: the first page
        ("at=-1", 0),
        ("after=1-" + "9" * 40, 0),
        ("before=%00", 0),
    ],
)
def test_a_bad_page_address_shows_the_nearest_page(client, admin, queue, query, first):
    client.force_login(admin)
    order = expected_order(queue)
    response = client.get(f"/queue/?{query}")
    assert response.status_code == 200
    names = ROW.findall(response.content.decode())
    want = order[-PAGE_SIZE:] if first == "last" else order[:PAGE_SIZE]
    assert names == want


def test_every_page_costs_the_same_queries(client, admin, queue):
    client.force_login(admin)
    _names, links, _ = rows(client)
    counts = []
    for query in ("", links["Next ›"], links["Last »"]):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"/queue/?{query}").status_code == 200
        counts.append(len(queries))
    assert counts[1] == counts[2] and counts[0] <= counts[1], counts


def test_nothing_waiting_says_so(client, admin, db):
    client.force_login(admin)
    names, links, body = rows(client)
    assert names == [] and links == {}
    assert "Nothing is waiting." in body and "queue-pages" not in body


def test_prediction_accuracy_counts_every_case(client, admin, alice, vision):
    """Held (started by the latest start and its minute of slack), missed (started later,
    or not started and overdue), pending (not started, not yet due); none without a bound."""
    now = timezone.now()
    cases = [
        ("held", now - timedelta(minutes=40), now - timedelta(minutes=30)),
        ("held-in-slack", now - timedelta(minutes=29, seconds=30), now - timedelta(minutes=30)),
        ("late", now - timedelta(minutes=10), now - timedelta(minutes=30)),
        ("overdue", None, now - timedelta(minutes=2)),
        ("pending", None, now + timedelta(minutes=30)),
        ("no-bound", None, None),
    ]
    for name, started, latest in cases:
        job = JobFactory(owner=alice, project=vision, name=name, phase=Phase.RUNNING)
        JobPrediction.objects.create(
            job=job, made_at=now - timedelta(hours=1), starts_now=False, latest_start=latest,
            position=1, queue_length=1,
        )  # fmt: skip
        Job.objects.filter(pk=job.pk).update(started_at=started)
    JobPrediction.objects.filter(job__name="held").update(made_at=now - timedelta(days=8))
    from jobs.views.queue import accuracy

    assert accuracy() == {
        "held": 1, "missed": 2, "pending": 1, "percent": 33, "days": 7,
    }  # fmt: skip
    assert accuracy(vision)["missed"] == 2
