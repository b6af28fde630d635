"""A web process answers at most its pool's size of page requests at once (console.asgi.Turns):
the others wait for their turn in order of arrival instead of being told "busy" after the
pool's short wait; only a turn that does not come within REQUEST_QUEUE_SECONDS is "busy".
Django itself is replaced here by a page that takes a while: what is tested is the turns."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

from console import asgi


def slow_page(seconds: float, seen: dict):
    async def page(scope, receive, send):
        seen["inside"] += 1
        seen["most"] = max(seen["most"], seen["inside"])
        seen["order"].append(scope["path"])
        await asyncio.sleep(seconds)
        seen["inside"] -= 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"page"})

    return page


async def ask(path: str) -> tuple[int, dict]:
    sent = []

    async def send(message):
        sent.append(message)

    await asgi.application({"type": "http", "path": path, "headers": []}, None, send)
    return sent[0]["status"], dict(sent[0]["headers"])


def crowd(paths: list[str]) -> list[tuple[int, dict]]:
    async def main():
        tasks = []
        for path in paths:  # each started before the next: their order of arrival
            tasks.append(asyncio.create_task(ask(path)))
            await asyncio.sleep(0)
        return await asyncio.gather(*tasks)

    # In a thread of its own: in a test process where a browser test ran, Playwright's loop
    # is the main thread's running loop, and asyncio.run() refuses to start another there.
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, main()).result()


def test_requests_beyond_the_pool_wait_their_turn_in_order(monkeypatch):
    seen = {"inside": 0, "most": 0, "order": []}
    monkeypatch.setattr(asgi, "turns", asgi.Turns(2, patience=5))
    monkeypatch.setattr(asgi, "django_application", slow_page(0.05, seen))
    paths = [f"/jobs/{i}/" for i in range(7)]
    answers = crowd(paths)
    assert [status for status, _headers in answers] == [200] * 7
    assert seen["most"] == 2
    assert seen["order"] == paths


def test_a_turn_that_does_not_come_in_time_is_busy_not_an_error(monkeypatch):
    seen = {"inside": 0, "most": 0, "order": []}
    monkeypatch.setattr(asgi, "turns", asgi.Turns(1, patience=0.2))
    monkeypatch.setattr(asgi, "django_application", slow_page(1.0, seen))
    (first, _), (second, headers) = crowd(["/queue/", "/cluster/"])
    assert (first, second) == (200, 503)
    assert headers[b"retry-after"] == b"5"
    assert seen["order"] == ["/queue/"]  # the busy one never reached the page
    # Its turn given back: the next request is answered.
    assert crowd(["/queue/"])[0][0] == 200


def test_static_files_do_not_queue_behind_pages(monkeypatch):
    seen = {"inside": 0, "most": 0, "order": []}
    monkeypatch.setattr(asgi, "turns", asgi.Turns(1, patience=0.2))
    monkeypatch.setattr(asgi, "django_application", slow_page(0.5, seen))
    answers = crowd(["/jobs/", "/static/console.css", "/static/htmx.min.js"])
    assert [status for status, _headers in answers] == [200, 200, 200]
    assert seen["most"] == 3  # the files were served beside the page, not after it
