"""The job list a page at a time by key (console/keyset.py): every order's pages, walked
forward from the first or backward from the last, show every visible job once, in the
database's order; the counts say what they know; a key of nothing still finds its place."""

import random
import re
from datetime import timedelta
from html import unescape

import pytest
from django.utils import timezone

from console import keyset
from console.sharing import Access
from jobs.models import Job, Priority, Status
from jobs.views.lists import SORTS
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.django_db

LINK = re.compile(r'<a class="page-link" href="([^"]+)">([^<]+)</a>')


def links(response) -> dict[str, str]:
    """The pager's links by their label's first word (First, Previous, Next, Last)."""
    body = response.content.decode()
    found = {}
    for href, label in LINK.findall(body):
        word = re.sub(r"[^A-Za-z]", "", unescape(label))
        found[word] = unescape(href)
    return found


def walk(client, query: str, direction: str) -> list[list[str]]:
    """Every page's names, following ``direction`` (Next or Previous) from ``query``."""
    pages, url = [], f"/jobs/{query}"
    while url:
        response = client.get(url)
        assert response.status_code == 200
        pages.append([job.name for job in response.context["page"].rows])
        found = links(response).get(direction)
        url = f"/jobs/{found}" if found else None
        assert len(pages) < 50, "the pages never end"
    return pages


@pytest.fixture
def many(alice, bob, vision):
    """61 jobs alice may see (hers and those bob shares), with names, priorities, creators
    and times that repeat, so that every order has ties the id must break; and bob's own
    jobs that she may not see."""
    rng = random.Random(7)
    now = timezone.now()
    for i in range(61):
        owner = alice if i % 3 else bob
        # One name many times: allowed among ended jobs only (one live job per name).
        ended = rng.choice([Status.SUCCEEDED, Status.ERROR]) if i % 4 == 0 else Status.QUEUED
        JobFactory(
            owner=owner,
            project=vision,
            name=f"{rng.choice('abcde')}-{i:02d}" if i % 4 else "same",
            status=ended,
            phase=ended,
            priority=rng.choice(list(Priority)),
            others_access=Access.READ_ONLY if owner == bob else Access.NONE,
            created_at=now - timedelta(minutes=rng.randrange(5)),
        )
    for i in range(5):
        JobFactory(owner=bob, project=vision, name=f"hidden-{i}")


@pytest.mark.parametrize("sort", [*SORTS, *(f"-{name}" for name in SORTS)])
def test_every_order_walks_every_job_once_both_ways(client, alice, many, sort):
    client.force_login(alice)
    order = ("-" if sort.startswith("-") else "") + SORTS[sort.lstrip("-")][0][0]
    pk = "-pk" if sort.startswith("-") else "pk"
    expected = list(
        Job.objects.visible_to(alice).order_by(order, pk).values_list("name", flat=True)
    )
    assert len(expected) == 61
    forward = walk(client, f"?sort={sort}&per_page=25", "Next")
    assert [len(p) for p in forward] == [25, 25, 11]
    assert [name for page in forward for name in page] == expected
    backward = walk(client, f"?sort={sort}&per_page=25&before=end", "Previous")
    # From the last page back: the last 25, the 25 before, then the first page, whole.
    assert [len(p) for p in backward] == [25, 25, 11]
    assert [name for page in reversed(backward) for name in page] == expected


def test_the_pager_counts_and_links(client, alice, many):
    client.force_login(alice)
    first = client.get("/jobs/?per_page=25")
    page = first.context["page"]
    assert (page.start, page.total) == (0, 61)
    assert "1–25 of 61" in first.content.decode()
    assert set(links(first)) == {"Next", "Last"}
    second = client.get("/jobs/" + links(first)["Next"])
    assert "26–50 of 61" in second.content.decode()
    assert set(links(second)) == {"First", "Previous", "Next", "Last"}
    last = client.get("/jobs/" + links(first)["Last"])
    assert "37–61 of 61" in last.content.decode()  # the last 25, not the rest after 50
    assert set(links(last)) == {"First", "Previous"}
    back = client.get("/jobs/" + links(last)["Previous"])
    everything = list(Job.objects.visible_to(alice).order_by("-created_at", "-pk"))
    assert back.context["page"].rows == everything[11:36]
    assert "12–36 of 61" in back.content.decode()


def test_the_filters_and_the_order_are_kept_and_the_key_dropped_by_a_header(client, alice, many):
    client.force_login(alice)
    response = client.get("/jobs/?name=-&sort=priority&per_page=10")
    following = links(response)["Next"]
    assert "name=-" in following and "sort=priority" in following and "per_page=10" in following
    second = client.get("/jobs/" + following)
    body = second.content.decode()
    headers = re.findall(r'<th[^>]*>\s*<a class="[^"]*" href="([^"]+)"', body)
    assert headers and all("after=" not in h and "before=" not in h for h in headers)
    # The search form keeps the order, so typing a name does not undo a header's sort.
    assert '<input type="hidden" name="sort" value="priority">' in body


def test_beyond_the_count_cap_the_page_says_more_than(client, alice, many, monkeypatch):
    monkeypatch.setattr(keyset, "COUNT_CAP", 30)
    client.force_login(alice)
    first = client.get("/jobs/?per_page=25")
    assert first.context["page"].total is None
    assert "1–25 of more than 30" in first.content.decode()
    second = client.get("/jobs/" + links(first)["Next"])
    assert "26–50 of more than 30" in second.content.decode()
    last = client.get("/jobs/" + links(first)["Last"])
    assert "the last 25 of more than 30" in last.content.decode()
    # Ten a page: the page before the last has 41 rows before it, more than counted.
    last = client.get("/jobs/?per_page=10&before=end")
    before_last = client.get("/jobs/" + links(last)["Previous"])
    assert before_last.context["page"].start is None
    assert "10 past the first 30" in before_last.content.decode()


def test_a_key_whose_job_is_gone_still_finds_its_place(client, alice, many):
    client.force_login(alice)
    first = client.get("/jobs/?per_page=25")
    rows = first.context["page"].rows
    following = links(first)["Next"]
    Job.objects.filter(pk=rows[-1].pk).delete()
    second = client.get("/jobs/" + following)
    expected = list(Job.objects.visible_to(alice).order_by("-created_at", "-pk")[24:49])
    assert second.context["page"].rows == expected
    assert second.context["page"].start == 24


def test_past_the_last_page_shows_the_last(client, alice, many):
    client.force_login(alice)
    last = client.get("/jobs/?per_page=25&before=end").context["page"]
    key = last.order.key(last.rows[-1])
    beyond = client.get(f"/jobs/?per_page=25&after={key}").context["page"]
    assert beyond.rows == last.rows and not beyond.has_next


def test_a_key_postgresql_could_not_compare_gives_the_first_page(client, alice, many):
    """Only a key made from a row reads back; text a column cannot hold is none (a crafted
    address, not a 500)."""
    import base64
    import json

    client.force_login(alice)
    first = client.get("/jobs/?sort=name&per_page=25").context["page"]
    for name in ("a\x00b", "a\ud800b"):
        text = json.dumps(["name", name, first.rows[-1].pk])  # escaped: ASCII
        key = base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
        for side in ("after", "before"):
            answer = client.get(f"/jobs/?sort=name&per_page=25&{side}={key}")
            assert answer.status_code == 200
            assert answer.context["page"].rows == first.rows


def test_an_empty_list_has_no_pager(client, alice):
    client.force_login(alice)
    key = keyset.Order("-created_at", (("created_at", object),)).key(JobFactory.build(pk=1))
    for query in ("", "?before=end", f"?after={key}"):
        response = client.get(f"/jobs/{query}")
        assert response.status_code == 200
        assert 'data-testid="job-pages"' not in response.content.decode()
        assert "No job matches." in response.content.decode()


def test_the_name_search_has_a_trigram_index_where_the_server_offers_one():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")
        if cursor.fetchone() is None:
            pytest.skip("this PostgreSQL has no pg_trgm: the search reads the table")
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'job_name_trigram'")
        (definition,) = cursor.fetchone()
    # The expression Django's case-insensitive "contains" asks for, or the index serves nothing.
    assert "upper((name)::text) gin_trgm_ops" in definition
    assert "UPPER(" in str(Job.objects.filter(name__icontains="x").query)


def test_the_three_ways_of_reading_visible_jobs_agree(alice, bob, charlie, admin, many):
    # Alice's own jobs that bob shares... and bob's own shared jobs, in both of the union's
    # halves for bob: counted once.
    for user in (alice, bob, charlie, admin):
        walked = set(Job.objects.visible_to(user).values_list("pk", flat=True))
        assert set(Job.objects.visible_set(user).values_list("pk", flat=True)) == walked
        assert set(Job.objects.visible_ids(user)) == walked
        assert keyset.capped_count(Job.objects.visible_ids(user)) == len(walked)
