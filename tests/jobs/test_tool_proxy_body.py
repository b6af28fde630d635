"""The tools' proxy refuses an upload past its limit with a clear 413, without holding more
of it than the limit, and passes nothing on when the browser leaves mid-upload."""

from __future__ import annotations

from jobs.tools import proxy
from tests.helpers import run_coroutine


def _upload(chunks: list[bytes], *, leaves: bool = False) -> tuple[list[dict], list[int]]:
    """Feed ``chunks`` to the proxy's HTTP handler; what it sent, and how many chunks it read."""
    messages = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1 or leaves}
        for i, chunk in enumerate(chunks)
    ]
    if leaves:
        messages.append({"type": "http.disconnect"})
    read, sent = [], []

    async def receive():
        read.append(1)
        return messages[len(read) - 1]

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/tools/1/upload", "headers": []}
    run_coroutine(proxy._http(scope, receive, send, tool=None))
    return sent, read


def test_an_upload_past_the_limit_gets_413_and_is_not_read_to_its_end(monkeypatch):
    monkeypatch.setattr(proxy, "MAX_BODY", 10)
    sent, read = _upload([b"123456", b"7890", b"x", b"never read"])
    assert sent[0]["status"] == 413
    assert b"too large" in sent[1]["body"]
    assert len(read) == 3  # stopped at the chunk that crossed the limit


def test_a_browser_that_leaves_mid_upload_gets_nothing_sent(monkeypatch):
    monkeypatch.setattr(proxy, "MAX_BODY", 10)
    sent, _ = _upload([b"12345"], leaves=True)
    assert sent == []
