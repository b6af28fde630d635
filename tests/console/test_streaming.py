"""Downloads stream under the ASGI server: a log larger than the web worker could hold twice
comes in pieces, and the worker's memory does not grow by its size."""

from __future__ import annotations

import psutil
import pytest

from jobs.models import Phase
from resources.catalog.mounts import storage_source
from tests.helpers import live_session, run_coroutine
from tests.jobs.execution_helpers import admit_and_launch, make_job, program, wait_for_phase

pytestmark = pytest.mark.usefixtures("transactional_db")


def _server_rss(url: str) -> int:
    """Bytes resident in the web server's processes (its master and workers)."""
    port = int(url.rsplit(":", 1)[1])
    pids = {c.pid for c in psutil.net_connections("tcp") if c.laddr and c.laddr.port == port}
    processes = {
        p for pid in pids if pid for p in [psutil.Process(pid), *psutil.Process(pid).children()]
    }
    return sum(p.memory_info().rss for p in processes)


def test_a_large_output_file_streams_through_the_asgi_server(asgi_web, alice, vision, run_cluster):
    job = make_job(alice, vision, run_cluster["cpu"])
    folder = storage_source(job.output_path)
    folder.mkdir(parents=True, exist_ok=True)
    big = folder / "weights.bin"
    with big.open("wb") as out:
        for _ in range(256):
            out.write(b"\1" * (1 << 20))  # 256 MiB
    with live_session(asgi_web, alice) as session:
        session.get(f"/jobs/{job.pk}/outputs/")  # the worker has served a page: warm
        before = _server_rss(asgi_web)
        answer = session.get(f"/jobs/{job.pk}/outputs/?path=weights.bin", stream=True)
        assert answer.status_code == 200
        assert answer.headers["Content-Length"] == str(256 << 20)
        first = next(answer.iter_content(1 << 16))
        assert first == b"\1" * len(first)
        received = len(first) + sum(len(part) for part in answer.iter_content(1 << 20))
        grown = _server_rss(asgi_web) - before
    assert received == 256 << 20
    # Read whole first, the file would have added its 256 MiB to the worker.
    assert grown < 64 << 20, f"the web server grew by {grown >> 20} MiB"


def test_a_log_download_streams_through_the_asgi_server(asgi_web, alice, vision, run_cluster):
    job = make_job(alice, vision, run_cluster["cpu"], command="python3 /workspace/algorithm/say.py")
    program(job, "say.py", "import sys\nfor i in range(200000):\n    print('line', i)\n")
    admit_and_launch()
    wait_for_phase(job, Phase.SUCCEEDED, Phase.ERROR, timeout=60)
    with live_session(asgi_web, alice) as session:
        answer = session.get(f"/jobs/{job.pk}/logs/download/")
        assert answer.status_code == 200
        lines = answer.text.splitlines()
    assert lines[0] == "line 0" and lines[-1] == "line 199999"


def test_static_files_stream_under_asgi_without_being_read_whole(recwarn):
    """WhiteNoise hands Django a synchronous iterator; the console's middleware makes it an
    asynchronous one, so Django neither reads it whole first nor warns."""
    from pathlib import Path

    from django.conf import settings
    from django.test import AsyncClient

    async def fetch():
        response = await AsyncClient().get("/static/console/console.js")
        return response, b"".join([part async for part in response.streaming_content])

    response, body = run_coroutine(fetch())
    assert response.status_code == 200
    assert response.is_async
    assert body == Path(settings.BASE_DIR, "static", "console", "console.js").read_bytes()
    assert not [w for w in recwarn if "synchronous iterators" in str(w.message)]
