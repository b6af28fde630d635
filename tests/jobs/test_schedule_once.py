"""``manage.py schedule_once``: one admission pass from the shell, said in plain words."""

import os
import socket
import subprocess
import sys
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import OperationalError

from jobs.models import Phase
from resources.models import Allocation
from tests.jobs.factories import JobFactory
from tests.resources.factories import AcceleratorModelFactory, NodeFactory, NodeSpecFactory


@pytest.fixture
def queue(alice, vision):
    """Two nodes of 8 boards: "fits" (2 x 4 boards) can start now, "too-big" (2 x 8) not
    beside it."""
    a100 = AcceleratorModelFactory(name="A100")
    for i in range(2):
        NodeFactory(name=f"g{i}", board_count=8, accelerator_model=a100)

    def spec(name, boards):
        return NodeSpecFactory(
            name=name, boards=Decimal(boards), accelerator_model=a100,
            cpu_millicores=1000, memory_mib=1024,
        )  # fmt: skip

    def job(name, specs):
        return JobFactory(
            owner=alice, project=vision, name=name, nodes_asked=2, mode="pytorch", specs=specs
        )

    return job("fits", [spec("a100x4", 4)]), job("too-big", [spec("a100x8", 8)])


def said(*args) -> str:
    out = StringIO()
    call_command("schedule_once", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_it_admits_what_fits_and_says_what_stays_queued(queue):
    fits, too_big = queue
    text = said()
    assert text.splitlines()[:3] == [
        "Admitted 1 job:",
        f"  fits (#{fits.pk}) on a100x4, 2 nodes",
        "1 job stays queued.",
    ]
    fits.refresh_from_db()
    too_big.refresh_from_db()
    assert fits.phase == Phase.ADMITTED and too_big.phase == Phase.QUEUED
    assert Allocation.objects.live().filter(holder_id=fits.pk).count() == 2
    assert too_big.queue_position == 1 and too_big.wait_reason
    # It only decides: the worker starts the job, not the shell that typed the command.
    assert not fits.attempts.exists()
    assert said().splitlines() == ["Admitted no job.", "1 job stays queued."]


@pytest.mark.django_db(transaction=True)
def test_a_dry_run_says_what_it_would_admit_and_writes_nothing(queue):
    fits, too_big = queue
    assert said("--dry-run").splitlines() == [
        "Would admit 1 job:",
        f"  fits (#{fits.pk}) on a100x4, 2 nodes",
        "1 job would stay queued.",
        "Dry run: nothing was written.",
    ]
    fits.refresh_from_db()
    too_big.refresh_from_db()
    assert fits.phase == too_big.phase == Phase.QUEUED
    assert too_big.queue_position is None and not Allocation.objects.exists()


def test_an_unreachable_database_is_one_line_not_a_trace(monkeypatch):
    def refused():
        raise OperationalError("connection refused\nIs the server running on that host?")

    monkeypatch.setattr("jobs.management.commands.schedule_once.admission_pass", refused)
    with pytest.raises(CommandError) as refusal:
        said()
    assert str(refusal.value) == (
        "The database does not answer (connection refused): no admission pass ran to its end."
    )


def test_from_the_shell_an_unreachable_database_is_one_line_and_exit_code_1():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:{port}/none",
           "DB_POOL_TIMEOUT": "1"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "manage.py", "schedule_once"], cwd=Path(__file__).resolve().parents[2],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.splitlines()  # no trace, no pool warnings
    assert line.startswith("CommandError: The database does not answer (")
    assert line.endswith("): no admission pass ran to its end.")
