"""JupyterLab's terminal frames through the proxy: host folders in what the shell prints are
named by the job's paths, even cut across frames; every other frame passes as it came."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from jobs.tools.lab_terminal import Frames, is_terminal, relay
from tests.helpers import run_coroutine

REPLICA = "/srv/runs/tool-1/jupyter-1"
WORK = "/srv/store/users/alice/devenvs/lab-1"
FOLDERS = {REPLICA: "/", WORK: "/workspace/work", "/srv/runtimes/torch": "/usr/local"}


def _stdout(frames: list) -> str:
    return "".join(json.loads(frame)[1] for frame in frames)


@pytest.mark.parametrize("cut", range(1, 60))
def test_a_path_cut_across_two_frames_comes_out_whole(cut):
    text = f"{WORK}\r\n{REPLICA}/workspace$ /srv/runtimes/torch/bin/python\r\n"
    frames = Frames(FOLDERS)
    sent = frames.passed(json.dumps(["stdout", text[:cut]]))
    sent += frames.passed(json.dumps(["stdout", text[cut:]]))
    sent += frames.flush()
    assert _stdout(sent) == "/workspace/work\r\n/workspace$ /usr/local/bin/python\r\n"


def test_other_frames_pass_as_they_came_after_what_was_held():
    frames = Frames(FOLDERS)
    setup = '["setup", {}]'
    assert frames.passed(setup) == [setup]
    assert frames.passed(b"\x00binary") == [b"\x00binary"]
    # Nothing to name: terminado's own frame, byte for byte.
    plain = json.dumps(["stdout", "hello \u4e2d\r\n"])
    assert frames.passed(plain) == [plain]
    assert frames.passed(json.dumps(["stdout", "cd /srv/ru"])) == [json.dumps(["stdout", "cd "])]
    # A frame of another kind sends the held text first: the order stays the tool's.
    ended = '["disconnect", 1]'
    assert frames.passed(ended) == [json.dumps(["stdout", "/srv/ru"]), ended]
    assert not frames.holding


def test_only_a_terminals_socket_is_translated():
    assert is_terminal("/tools/12/terminals/websocket/1")
    assert not is_terminal("/tools/12/api/kernels/abc/channels")
    assert not is_terminal("/tools/12/terminals/websocket/1/../../api/events/subscribe")


def test_held_output_is_sent_when_nothing_follows(tmp_path):
    """A real WebSocket: the tool prints a host folder whose next character would decide
    what it is (``lab-1`` or ``lab-12``), then nothing; the browser still gets it at once."""
    from websockets.asyncio.client import unix_connect
    from websockets.asyncio.server import unix_serve

    async def tool(connection):
        await connection.send(json.dumps(["stdout", f"cd {WORK}"]))
        await connection.wait_closed()  # and nothing more

    async def run() -> list[tuple[float, str]]:
        got = []

        async def send(message):
            got.append((time.monotonic(), message.get("text")))

        path = str(tmp_path / "tool.sock")
        async with unix_serve(tool, path), unix_connect(path) as upstream:
            started = time.monotonic()
            task = asyncio.create_task(relay(upstream, send, FOLDERS))
            while len(got) < 2 and time.monotonic() - started < 2:
                await asyncio.sleep(0.01)
            task.cancel()
            return [(when - started, text) for when, text in got]

    got = run_coroutine(run())
    assert [text for _when, text in got] == [
        json.dumps(["stdout", "cd "]),
        json.dumps(["stdout", "/workspace/work"]),
    ]
    assert got[-1][0] < 1.0
