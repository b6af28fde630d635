"""Rate limits on writes a user can hammer: real requests, counts in the real Redis cache."""

import threading
import time
from types import SimpleNamespace

import pytest
from django.core.cache import cache

from console import ratelimit
from jobs.models import JobEvent, Priority
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.django_db


def priority_events(job) -> int:
    return JobEvent.objects.filter(job=job, message__startswith="Priority changed").count()


def hammer(client, job, times: int) -> list[int]:
    """Post alternating priorities, so that every allowed post is a real change."""
    return [
        client.post(
            f"/jobs/{job.pk}/priority/",
            {"priority": Priority.URGENT if n % 2 == 0 else Priority.NORMAL},
        ).status_code
        for n in range(times)
    ]


@pytest.fixture(autouse=True)
def one_window(monkeypatch):
    """Windows are fixed (console.ratelimit): a burst that crosses a window's edge may pass
    up to twice the limit. Counting tests see one window: the limiter's clock stands still,
    10 seconds into an hour (every limit's window divides an hour)."""
    still = (time.time() // 3600) * 3600 + 10
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: still))


@pytest.fixture
def alice_job(client, alice, vision):
    client.force_login(alice)
    return JobFactory(owner=alice, project=vision)


def test_hammering_priority_stops_at_the_limit(client, alice_job, settings):
    count, _seconds = settings.RATE_LIMITS["priority"]
    codes = hammer(client, alice_job, 50)
    assert codes == [302] * count + [429] * (50 - count)
    assert priority_events(alice_job) == count


def test_the_refusal_says_what_and_how_long(client, alice_job, settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "priority": (2, 60)}
    hammer(client, alice_job, 2)
    refused = client.post(
        f"/jobs/{alice_job.pk}/priority/",
        {"priority": Priority.URGENT},
        headers={"Referer": f"http://testserver/jobs/{alice_job.pk}/"},
    )
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    text = refused.content.decode()
    assert "Too many priority changes: at most 2 every 60 seconds" in text
    assert "nothing was changed this time" in text
    assert f'href="/jobs/{alice_job.pk}/"' in text  # the way back: the job's page
    assert '<nav class="navbar' in text  # inside the layout


def test_the_way_back_never_comes_from_the_referer(client, alice_job, settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "priority": (1, 60)}
    hammer(client, alice_job, 1)
    refused = client.post(
        f"/jobs/{alice_job.pk}/priority/", {"priority": 1},
        headers={"Referer": "https://elsewhere.example/"},
    )  # fmt: skip
    assert "elsewhere.example" not in refused.content.decode()


def test_under_htmx_the_refusal_is_the_messages_area(client, alice_job, settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "priority": (1, 60)}
    hammer(client, alice_job, 1)
    refused = client.post(
        f"/jobs/{alice_job.pk}/priority/", {"priority": 1}, headers={"HX-Request": "true"}
    )
    assert refused.status_code == 429
    text = refused.content.decode()
    assert text.lstrip().startswith('<div id="messages"')
    assert "alert-danger" in text
    assert "Too many priority changes" in text


def test_the_refusal_is_translated(client, alice_job, settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "priority": (1, 60)}
    hammer(client, alice_job, 1)
    refused = client.post(
        f"/jobs/{alice_job.pk}/priority/", {"priority": 1}, headers={"Accept-Language": "zh-hans"}
    )
    assert refused.status_code == 429
    assert "优先级调整过于频繁" in refused.content.decode()


def test_another_user_is_not_affected(client, alice_job, bob, vision):
    hammer(client, alice_job, 25)
    bobs = JobFactory(owner=bob, project=vision)
    client.force_login(bob)
    assert hammer(client, bobs, 3) == [302, 302, 302]
    assert priority_events(bobs) == 3


def test_the_queue_page_counts_as_priority_changes_too(client, alice_job, alice, settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "priority": (3, 60)}
    client.force_login(alice)
    codes = [
        client.post(f"/queue/{alice_job.pk}/priority/", {"priority": n % 2}).status_code
        for n in range(1, 6)
    ]
    assert codes == [302, 302, 302, 429, 429]


def test_the_limit_resets_after_its_window(client, alice_job, settings, monkeypatch):
    monkeypatch.setattr(ratelimit, "time", time)  # the real clock: windows pass here
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "priority": (3, 2)}
    # Start at the beginning of a window, so that the first four posts share one.
    time.sleep(2 - time.time() % 2 + 0.05)
    assert hammer(client, alice_job, 4) == [302, 302, 302, 429]
    time.sleep(2 - time.time() % 2 + 0.05)
    back = client.post(f"/jobs/{alice_job.pk}/priority/", {"priority": Priority.NORMAL})
    assert back.status_code == 302
    assert priority_events(alice_job) == 4


def test_gets_are_not_counted(client, alice_job, settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "job_change": (1, 60)}
    for _ in range(3):
        assert client.get(f"/jobs/{alice_job.pk}/stop/").status_code == 200
    assert client.post(f"/jobs/{alice_job.pk}/duration/", {"hours": 2}).status_code == 302
    assert client.post(f"/jobs/{alice_job.pk}/duration/", {"hours": 3}).status_code == 429
    # Stop, delete and bulk delete share the kind.
    assert client.post(f"/jobs/{alice_job.pk}/stop/").status_code == 429
    assert client.post("/jobs/delete/", {"ids": [alice_job.pk]}).status_code == 429


@pytest.mark.parametrize(
    ("kind", "path", "data", "back"),
    [
        ("submit", "/jobs/new/", {}, None),  # the form itself comes back (tests/jobs)
        ("devenv", "/jobs/{job}/devenv/", {"name": "dev"}, "/jobs/{job}/"),
        ("catalog", "/catalog/datasets/new/", {}, "/catalog/datasets/"),
        ("settings", "/settings/", {}, "/settings/"),
        ("settings", "/settings/inventory/pools/new/", {}, "/settings/inventory/pools/"),
    ],
)
def test_every_write_endpoint_is_limited(
    client, alice_job, admin, settings, kind, path, data, back
):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, kind: (1, 60)}
    if kind == "settings":
        client.force_login(admin)
    url = path.format(job=alice_job.pk)
    assert client.post(url, data).status_code != 429
    refused = client.post(url, data)
    assert refused.status_code == 429
    if back:
        assert f'href="{back.format(job=alice_job.pk)}"' in refused.content.decode()


def test_counts_are_atomic_across_connections(alice, settings):
    """Eight threads, each with its own cache connection, count 200 hits: exactly the
    limit's number are allowed."""
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "priority": (50, 600)}
    allowed = []

    def worker():
        mine = sum(ratelimit.hit("priority", alice) is None for _ in range(25))
        allowed.append(mine)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(allowed) == 50


def test_a_cache_that_does_not_answer_lets_writes_through(alice, settings, monkeypatch):
    def broken(*args, **kwargs):
        raise ConnectionError("cache down")

    monkeypatch.setattr(cache, "add", broken)
    assert ratelimit.hit("priority", alice) is None
