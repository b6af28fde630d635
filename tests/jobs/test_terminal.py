"""The debug terminal (SPEC J20): a real shell in a real job's replica, over the console's own
ASGI server (gunicorn + uvicorn, as `make run` starts it), and everyone it must refuse."""

from __future__ import annotations

import os
import re
import time
from datetime import timedelta

import psutil
import pytest
from django.test import Client
from django.utils import timezone
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from console.sharing import Access
from jobs import permissions
from jobs.models import Attempt, Phase
from jobs.terminal import access, retention
from jobs.terminal.paths import PathStream
from resources.inventory import identity
from tests.helpers import wait_until
from tests.jobs.execution_helpers import admit_and_launch, make_job, program, wait_for_phase

pytestmark = pytest.mark.usefixtures("local_runs")

SLEEPER = "import time\nprint('training', flush=True)\ntime.sleep(300)\n"
FAILS = "import sys\nprint('broken', flush=True)\nsys.exit(3)\n"


@pytest.fixture
def web(asgi_web):
    """The ASGI server's host:port (the WebSocket's address)."""
    return asgi_web.removeprefix("http://")


def cookie_of(user) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def open_terminal(web, job, replica, user=None, origin=None):
    headers = {"Origin": origin or f"http://{web}"}
    if user is not None:
        headers["Cookie"] = cookie_of(user)
    url = f"ws://{web}/jobs/{job.pk}/terminal/{replica}/socket/?rows=30&cols=120"
    return connect(url, additional_headers=headers, open_timeout=10)


def refusal(web, job, replica, user=None, origin=None) -> int:
    """The close code the server ends the connection with (it sends no shell)."""
    with open_terminal(web, job, replica, user, origin) as terminal:
        with pytest.raises(ConnectionClosed):
            while True:
                terminal.recv(timeout=10)
        return terminal.close_code


def read_until(terminal, pattern: str, timeout: float = 15) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    while not re.search(pattern, seen):
        left = deadline - time.monotonic()
        assert left > 0, f"no {pattern!r} in {seen!r}"
        try:
            data = terminal.recv(timeout=left)
        except TimeoutError:
            raise AssertionError(f"no {pattern!r} in {seen!r} after {timeout}s") from None
        seen += data.decode() if isinstance(data, bytes) else data
    return seen


def running_job(owner, project, spec, **fields):
    job = make_job(owner, project, spec, name=fields.pop("name", "debugme"), debug_terminal=True,
                   command="python3 /workspace/algorithm/t.py", **fields)  # fmt: skip
    program(job, "t.py", SLEEPER)
    admit_and_launch()
    job = wait_for_phase(job, Phase.RUNNING, Phase.ERROR)
    assert job.phase == Phase.RUNNING, job.reason
    attempt = Attempt.objects.get(job=job)
    return job, attempt, attempt.replicas[0]["name"]


def test_a_shell_in_the_replica_as_its_processes_are(web, settings, alice, vision, run_cluster):
    job, _, replica = running_job(alice, vision, run_cluster["cpu"])
    with open_terminal(web, job, replica, alice) as terminal:
        read_until(terminal, r"/workspace\$ ")  # the prompt (a resize may redraw it)
        terminal.send(b"pwd; id -u; echo shell=$$; sleep 300 & echo bg=$!\r")
        seen = read_until(terminal, r"bg=\d+")
        terminal.send(b'{"rows": 40, "cols": 100}'.decode())  # a resize: text frame
        terminal.send(b"stty size\r")
        seen += read_until(terminal, r"40 100")
    # The job's path, never this machine's folder; the job's identity.
    assert "/workspace" in seen
    assert str(settings.RUNS_DIR) not in seen
    if os.geteuid() == 0:
        assert re.search(rf"^{identity.user_number(alice.pk)}\r?$", seen, re.M), seen
    shell = int(re.search(r"shell=(\d+)", seen)[1])
    background = int(re.search(r"bg=(\d+)", seen)[1])
    # Closing the page ends the shell and its background job; nothing is left, not even a
    # zombie.
    wait_until(lambda: not psutil.pid_exists(shell) and not psutil.pid_exists(background), 10)
    messages = list(job.events.values_list("message", flat=True))
    opened = [m for m in messages if "opened a debug terminal" in m]
    closed = [m for m in messages if "closed the debug terminal" in m]
    assert opened and closed and "alice" in opened[0], messages
    # The job itself runs on.
    job.refresh_from_db()
    assert job.phase == Phase.RUNNING


def test_who_and_what_is_refused(web, alice, bob, charlie, vision, run_cluster):
    job, _, replica = running_job(alice, vision, run_cluster["cpu"])
    assert refusal(web, job, replica) == access.LOGIN
    assert refusal(web, job, replica, charlie) == access.NOT_FOUND
    assert refusal(web, job, replica, bob) == access.NOT_FOUND  # not shared: not seen
    job.others_access = Access.READ_ONLY
    job.save(update_fields=["others_access"])
    permissions.grant(job)
    assert refusal(web, job, replica, bob) == access.FORBIDDEN  # read-only: no terminal
    assert refusal(web, job, "worker-99", alice) == access.NOT_FOUND
    with pytest.raises(InvalidStatus) as refused:  # another site's page: no handshake
        open_terminal(web, job, replica, alice, origin="http://evil.example")
    assert refused.value.response.status_code == 403
    # Read-write sharing gives a terminal.
    job.others_access = Access.READ_WRITE
    job.save(update_fields=["others_access"])
    permissions.grant(job)
    with open_terminal(web, job, replica, bob) as terminal:
        read_until(terminal, r"/workspace\$ ")  # the prompt (a resize may redraw it)
    # The terminal off: nothing.
    job.debug_terminal = False
    job.save(update_fields=["debug_terminal"])
    assert refusal(web, job, replica, alice) == access.OFF


def test_a_failed_job_is_kept_for_its_hours_then_freed(web, settings, alice, vision, run_cluster):
    job = make_job(alice, vision, run_cluster["cpu"], name="broken", debug_terminal=True,
                   command="python3 /workspace/algorithm/t.py")  # fmt: skip
    program(job, "t.py", FAILS)
    admit_and_launch()
    job = wait_for_phase(job, Phase.ERROR)
    attempt = Attempt.objects.get(job=job)
    replica = attempt.replicas[0]["name"]
    client = Client()
    client.force_login(alice)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Kept for debugging until" in page and f"/terminal/{replica}/" in page
    with open_terminal(web, job, replica, alice) as terminal:
        read_until(terminal, r"/workspace\$ ")  # the prompt (a resize may redraw it)
        terminal.send(b"ls\r")
        assert "outputs" in read_until(terminal, r"outputs")

    # The hours are over: refused, and beat's task frees the containers once.
    Attempt.objects.filter(pk=attempt.pk).update(ended_at=timezone.now() - timedelta(hours=5))
    assert refusal(web, job, replica, alice) == access.ENDED
    assert "Open terminal" not in client.get(f"/jobs/{job.pk}/").content.decode()
    folder = settings.RUNS_DIR / attempt.workload_id / replica
    assert (folder / "workspace").exists()
    assert retention.discard_expired() == [job.pk]
    assert retention.discard_expired() == []  # a second run (or a duplicate task) does nothing
    assert not (folder / "workspace").exists() and (folder / "log.txt").exists()
    assert job.events.filter(message__contains="Kept 4 hours for debugging").count() == 1


def test_a_job_that_failed_on_kubernetes_offers_no_terminal(alice, vision, run_cluster):
    """Its pods ended: there is no container left to enter, so nothing is offered."""
    from resources.models import Cluster

    cluster = Cluster(name="gpu-cluster", connection=Cluster.Connection.TOKEN,
                      api_url="https://127.0.0.1:1", namespace="ml")  # fmt: skip
    cluster.set_token("t")
    cluster.save()
    job = make_job(alice, vision, run_cluster["cpu"], debug_terminal=True, phase=Phase.ERROR)
    attempt = Attempt.objects.create(
        job=job, number=1, backend="kubernetes", workload_id="job-x-1",
        cluster=cluster,
        submitted_at=timezone.now() - timedelta(minutes=5), ended_at=timezone.now(),
        replicas=[{"name": "job-x-worker-0", "label": "worker 0"}],
    )  # fmt: skip
    assert access.kept_until(job, attempt) is None
    assert not access.open_now(job, attempt)
    assert access.check(alice, job.pk, "job-x-worker-0") == access.Refusal(access.ENDED)
    Attempt.objects.filter(pk=attempt.pk).update(cluster=None, backend="local")
    attempt.refresh_from_db()
    assert access.kept_until(job, attempt) is not None  # the local backend keeps them


def test_the_page(alice, bob, charlie, vision, run_cluster):
    job, _, replica = running_job(alice, vision, run_cluster["cpu"])
    client = Client()
    client.force_login(alice)
    detail = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f'href="/jobs/{job.pk}/terminal/{replica}/"' in detail
    page = client.get(f"/jobs/{job.pk}/terminal/{replica}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Back to the job" in text and "xterm/xterm/xterm.js" in text
    assert f"console-u{alice.pk}" in text and "workspace is cleaned" in text
    assert client.get(f"/jobs/{job.pk}/terminal/worker-99/").status_code == 404
    for user, status in ((charlie, 404), (bob, 404)):
        client.force_login(user)
        assert client.get(f"/jobs/{job.pk}/terminal/{replica}/").status_code == status
    job.others_access = Access.READ_ONLY
    job.save(update_fields=["others_access"])
    permissions.grant(job)
    client.force_login(bob)
    assert client.get(f"/jobs/{job.pk}/terminal/{replica}/").status_code == 403
    assert "Open terminal" not in client.get(f"/jobs/{job.pk}/").content.decode()
    assert Client().get(f"/jobs/{job.pk}/terminal/{replica}/").status_code == 302


@pytest.mark.parametrize("cut", range(1, 40))
def test_paths_cut_anywhere_are_still_named_as_the_job_knows_them(cut):
    host = "/srv/runs/job-1-1/worker-0"
    stream = PathStream({host: "/", "/srv/store/users/alice/out": "/workspace/outputs"})
    raw = f"alice@worker-0:{host}/workspace$ ls {host}0 /srv/store/users/alice/out/x 中文\n"
    data = raw.encode()
    shown = stream.feed(data[:cut]) + stream.feed(data[cut:]) + stream.flush()
    assert shown == (f"alice@worker-0:/workspace$ ls {host}0 /workspace/outputs/x 中文\n")
