import os
import socket
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def _small_prechecks():
    """`make run` runs in a process of its own with the real limits: forms posted to it are
    built from the real defaults too."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def supervisor_env(tmp_path):
    """The environment of a bare machine: nothing named, so the embedded servers start."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    env.update(VAR_DIR=str(tmp_path / "var"), PORT=str(free_port()), DEMO_MODE="1")
    yield env
    # The demo's jobs run on after `make run` stops, as jobs do on a real machine; not after
    # the test: they would take the cores from the tests that follow.
    from tests.resources.test_local_runner_helpers import kill_marked_under

    kill_marked_under(tmp_path)


@pytest.fixture
def supervisor_argv():
    return [sys.executable, "-m", "console.supervisor"]
