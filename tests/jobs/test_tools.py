"""TensorBoard (SPEC O9) and JupyterLab (O8) as real processes behind the console's proxy:
reachable only with the console's login, the job's permission and the user's own ticket."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.core import signing
from django.utils import translation

from console.sharing import Access
from jobs import permissions
from jobs.models import JobEvent, Tool
from jobs.tools import access
from jobs.tools.proxy import UPSTREAM_OPEN_SECONDS
from resources.catalog.mounts import storage_source
from tests.helpers import live_session, wait_until
from tests.jobs.factories import JobFactory
from tests.jobs.tools_helpers import write_scalars

pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.fixture
def scalars_job(alice, vision, tools_runtime):
    """A finished batch job of alice's whose three sub-tasks each wrote a loss curve."""
    job = JobFactory(owner=alice, project=vision, job_type="batch", status="succeeded",
                     phase="succeeded")  # fmt: skip
    outputs = storage_source(job.output_path)
    runs = [outputs / f"{job.name}-{index}" for index in range(3)]
    write_scalars(tools_runtime, runs, "loss", [1.0, 0.5, 0.25])
    return job


def _open(session, job) -> Tool:
    answer = session.post(f"/jobs/{job.pk}/tensorboard/")
    assert answer.status_code == 200, answer.text[:300]
    tool = Tool.objects.get(job=job, state__in=["starting", "running"])

    def ready():
        session.get(f"/jobs/{job.pk}/tensorboard/status/")
        tool.refresh_from_db()
        return tool.state != Tool.State.STARTING

    try:
        wait_until(ready, timeout=60, interval=0.3)
    except AssertionError:
        raise AssertionError(f"{tool.state}: {tool.message}\n{tool_log(tool)}") from None
    assert tool.state == Tool.State.RUNNING, f"{tool.state}: {tool.message}\n{tool_log(tool)}"
    return tool


def tool_log(tool: Tool) -> str:
    from jobs.tools import launch
    from resources.backends import local_backend

    try:
        return local_backend().logs(tool.workload_id, launch.replica_name(tool), 0, 1 << 16)[0]
    except Exception as error:
        return f"(no log: {error})"


def test_tensorboard_shows_every_subtask_of_a_batch_job(asgi_web, alice, scalars_job):
    with live_session(asgi_web, alice) as session:
        tool = _open(session, scalars_job)
        page = session.get(f"/jobs/{scalars_job.pk}/tensorboard/")
        assert f'src="/tools/{tool.pk}/"' in page.text
        runs = session.get(f"/tools/{tool.pk}/data/runs")
        assert runs.status_code == 200
        assert sorted(runs.json()) == [f"{scalars_job.name}-{i}" for i in range(3)]
        tags = session.get(f"/tools/{tool.pk}/data/plugin/scalars/tags").json()
        assert all("loss" in tags[run] for run in runs.json())
    event = JobEvent.objects.filter(job=scalars_job, item="tensorboard").first()
    assert event is not None and "alice" in event.message


def test_only_people_who_may_see_the_job_reach_its_tensorboard(
    asgi_web, alice, bob, charlie, scalars_job
):
    with live_session(asgi_web, alice) as owner:
        tool = _open(owner, scalars_job)
        url = f"/tools/{tool.pk}/data/runs"
        assert owner.get(url).status_code == 200
        ticket = owner.cookies.get(access.cookie_name(tool.pk))
    # Logged out, even holding the owner's ticket: nothing.
    with live_session(asgi_web) as stranger:
        stranger.cookies.set(access.cookie_name(tool.pk), ticket)
        assert stranger.get(url).status_code == 401
    # charlie is in another project; bob in the same one, but the job is not shared.
    for other in (charlie, bob):
        with live_session(asgi_web, other) as session:
            assert session.get(f"/jobs/{scalars_job.pk}/tensorboard/").status_code == 404
            session.cookies.set(access.cookie_name(tool.pk), ticket)  # alice's ticket
            assert session.get(url).status_code == 404
    # Shared read-only: bob may look at it, through a ticket of his own.
    scalars_job.others_access = Access.READ_ONLY
    scalars_job.save()
    permissions.grant(scalars_job)
    with live_session(asgi_web, bob) as session:
        set_ticket(session, tool, ticket)
        assert session.get(url).status_code == 403  # alice's ticket is not his
        assert session.get(f"/jobs/{scalars_job.pk}/tensorboard/").status_code == 200
        assert session.get(url).status_code == 200  # with his own
        # A read-only viewer may not stop what the owner started.
        assert session.post(f"/jobs/{scalars_job.pk}/tensorboard/stop/").status_code == 403


def set_ticket(session, tool: Tool, value: str) -> None:
    """Replace the session's ticket for ``tool`` (whatever domain the server gave it)."""
    name = access.cookie_name(tool.pk)
    for cookie in list(session.cookies):
        if cookie.name == name:
            session.cookies.clear(cookie.domain, cookie.path, cookie.name)
    session.cookies.set(name, value, path=f"/tools/{tool.pk}/")


def test_an_expired_ticket_opens_nothing(asgi_web, alice, scalars_job, monkeypatch):
    with live_session(asgi_web, alice) as session:
        tool = _open(session, scalars_job)
        old = time.time() - access.TICKET_SECONDS - 5
        monkeypatch.setattr(signing.time, "time", lambda: old)
        stale = access.ticket(alice, tool)
        monkeypatch.undo()
        set_ticket(session, tool, stale)
        answer = session.get(f"/tools/{tool.pk}/data/runs")
        assert answer.status_code == 403
        assert "open it again" in answer.text
        # The console's page gives a fresh one.
        session.get(f"/jobs/{scalars_job.pk}/tensorboard/")
        assert session.get(f"/tools/{tool.pk}/data/runs").status_code == 200


def test_the_tool_never_sees_the_console_session(asgi_web, alice, scalars_job):
    from jobs.tools.proxy import _upstream_headers

    tool = Tool(pk=5, secret="s3cret")
    scope = {
        "type": "http",
        "headers": [
            (b"cookie", b"sessionid=abc; csrftoken=def; console-tool-5=t; _xsrf=keep"),
            (b"authorization", b"Bearer from-the-browser"),
        ],
    }
    headers = dict(_upstream_headers(scope, tool, websocket=False))
    assert headers["cookie"] == "_xsrf=keep"
    assert headers["authorization"] == "token s3cret"


def test_a_stopped_tensorboard_is_gone_and_says_who_stopped_it(asgi_web, alice, scalars_job):
    with live_session(asgi_web, alice) as session:
        tool = _open(session, scalars_job)
        assert session.post(f"/jobs/{scalars_job.pk}/tensorboard/stop/").status_code == 200
        tool.refresh_from_db()
        assert tool.state == Tool.State.STOPPED
        assert session.get(f"/tools/{tool.pk}/data/runs").status_code == 404
        page = session.get(f"/jobs/{scalars_job.pk}/tensorboard/").text
        assert "Stopped by alice." in page


# --- JupyterLab ----------------------------------------------------------------------------


@pytest.fixture
def lab_env(alice, vision, tools_runtime):
    from jobs.models import DevEnvironment
    from tests.resources.factories import ImageFactory, NodeSpecFactory

    return DevEnvironment.objects.create(
        name="alice-lab", owner=alice, project=vision, image=ImageFactory(),
        spec=NodeSpecFactory(),
    )  # fmt: skip


def _open_lab(session, env) -> Tool:
    assert session.post(f"/devenvs/{env.pk}/lab/").status_code == 200
    tool = Tool.objects.get(devenv=env, state__in=["starting", "running"])

    def ready():
        session.get(f"/devenvs/{env.pk}/lab/status/")
        tool.refresh_from_db()
        return tool.state != Tool.State.STARTING

    wait_until(ready, timeout=90, interval=0.3)
    assert tool.state == Tool.State.RUNNING, f"{tool.state}: {tool.message}\n{tool_log(tool)}"
    return tool


def _kernel_socket(base: str, session, tool: Tool, kernel: str, origin: str | None = None):
    from websockets.sync.client import connect

    cookies = "; ".join(f"{c.name}={c.value}" for c in session.cookies)
    url = base.replace("http://", "ws://") + f"/tools/{tool.pk}/api/kernels/{kernel}/channels"
    return connect(url, additional_headers={"Cookie": cookies}, origin=origin or base,
                   open_timeout=UPSTREAM_OPEN_SECONDS + 5)  # fmt: skip


def _run_cell(socket, code: str) -> str:
    import json
    import uuid

    msg_id = uuid.uuid4().hex
    socket.send(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "", "session": "t",
                   "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": False,
                    "user_expressions": {}, "allow_stdin": False},
    }))  # fmt: skip
    printed = []
    while True:
        message = json.loads(socket.recv(timeout=60))
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return "".join(printed)


def test_jupyterlab_runs_a_cell_as_its_owner_in_the_workspace(asgi_web, alice, lab_env):
    from resources.inventory import identity

    with live_session(asgi_web, alice) as session:
        tool = _open_lab(session, lab_env)
        assert session.get(f"/tools/{tool.pk}/lab").status_code == 200
        kernel = session.post(f"/tools/{tool.pk}/api/kernels", json={"name": "python3"})
        assert kernel.status_code == 201, kernel.text
        with _kernel_socket(asgi_web, session, tool, kernel.json()["id"]) as socket:
            printed = _run_cell(socket, "import os, torch; print(os.getuid(), os.getcwd())")
        uid, cwd = printed.split()
        assert int(uid) == identity.user_number(alice.pk)
        assert cwd.endswith("/workspace")
        # Notebooks go to the environment's own folder, which outlives the server.
        saved = session.put(f"/tools/{tool.pk}/api/contents/work/notes.txt",
                            json={"type": "file", "format": "text", "content": "kept"})  # fmt: skip
        assert saved.status_code in (200, 201), saved.text + tool_log(tool)
        # JupyterLab's own terminal works through the proxy too.
        terminal = session.post(f"/tools/{tool.pk}/api/terminals")
        assert terminal.status_code == 200, terminal.text
    work = storage_source(f"users/alice/devenvs/{lab_env.name}-{lab_env.pk}")
    assert (work / "notes.txt").read_text() == "kept"


def _terminal_socket(base: str, session, tool: Tool, name: str):
    from websockets.sync.client import connect

    cookies = "; ".join(f"{c.name}={c.value}" for c in session.cookies)
    url = base.replace("http://", "ws://") + f"/tools/{tool.pk}/terminals/websocket/{name}"
    return connect(url, additional_headers={"Cookie": cookies}, origin=base, open_timeout=10)


def _type(socket, keys: str, until: str) -> str:
    """Send ``keys`` to a JupyterLab terminal and read what it prints until ``until``."""
    import json
    import re

    socket.send(json.dumps(["stdin", keys]))
    printed, deadline = "", time.monotonic() + 30
    while until not in printed:
        assert time.monotonic() < deadline, f"no {until!r} in {printed!r}"
        message = json.loads(socket.recv(timeout=30))
        if message[0] == "stdout":
            printed += message[1]
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", printed)  # bash's bracketed-paste switches


def test_jupyterlab_terminal_is_bash_with_the_image_python_and_the_job_paths(
    asgi_web, alice, lab_env, settings
):
    from jobs.tools import launch

    with live_session(asgi_web, alice) as session:
        tool = _open_lab(session, lab_env)
        # Asked for without a folder, as JupyterLab's API allows.
        terminal = session.post(f"/tools/{tool.pk}/api/terminals")
        assert terminal.status_code == 200, terminal.text
        with _terminal_socket(asgi_web, session, tool, terminal.json()["name"]) as socket:
            socket.send('["set_size", 24, 200]')  # the command's echo on one line
            keys = "pwd; echo $SHELL; command -v python; python -c 'import sys; print(sys.prefix)'"
            printed = _type(socket, keys + "; echo END-$((6 * 7))\r", until="END-42")
    lines = [line.strip() for line in printed.split("\r\n")]
    # The answers follow the echoed command, one per line. Keys typed before bash is ready
    # are echoed twice (by the terminal, then after bash's prompt): the answers follow the last.
    echoed = max(number for number, line in enumerate(lines) if "END-$" in line)
    answers = lines[echoed + 1 :]
    assert answers[:5] == [
        "/workspace/work",  # the environment's own folder, named as the job knows it
        "/bin/bash",
        "/usr/local/bin/python",  # the image's runtime, where a container has its Python
        "/usr/local",
        "END-42",
    ], printed
    # The prompt names the environment and where the shell is.
    assert f"@{lab_env.name}:/workspace/work$" in printed, printed
    runtime = launch.runtime_with("jupyter-lab", lab_env.image)
    for folder in (settings.STORAGE_ROOT, settings.RUNS_DIR, runtime, settings.RUNTIMES_DIR):
        assert str(Path(folder).resolve()) not in printed, printed
        assert str(folder) not in printed, printed


def test_nobody_but_the_owner_gets_into_a_jupyterlab(asgi_web, alice, bob, admin, lab_env):
    from websockets.exceptions import InvalidStatus

    with live_session(asgi_web, alice) as owner:
        tool = _open_lab(owner, lab_env)
        kernel = owner.post(f"/tools/{tool.pk}/api/kernels", json={"name": "python3"}).json()
        ticket = owner.cookies.get(access.cookie_name(tool.pk))
        # A page of another site cannot open the owner's kernel with the owner's cookies.
        with (
            pytest.raises(InvalidStatus),
            _kernel_socket(asgi_web, owner, tool, kernel["id"], origin="http://evil.example"),
        ):
            pass
    for other, page_status in ((bob, 404), (admin, 403)):
        with live_session(asgi_web, other) as session:
            assert session.get(f"/devenvs/{lab_env.pk}/lab/").status_code == page_status
            set_ticket(session, tool, ticket)
            assert session.get(f"/tools/{tool.pk}/api/status").status_code == 404
            with (
                pytest.raises(InvalidStatus),
                _kernel_socket(asgi_web, session, tool, kernel["id"]),
            ):
                pass
    with live_session(asgi_web) as anonymous:
        set_ticket(anonymous, tool, ticket)
        assert anonymous.get(f"/tools/{tool.pk}/api/status").status_code == 401


def test_beat_stops_a_tensorboard_nobody_used_and_removes_its_folder(
    asgi_web, alice, scalars_job, settings
):
    from datetime import timedelta

    from django.utils import timezone

    from jobs.tasks import sync_tools

    with live_session(asgi_web, alice) as session:
        tool = _open(session, scalars_job)
    assert sync_tools() == {"checked": 1, "idle": 0, "cleaned": 0}
    Tool.objects.filter(pk=tool.pk).update(last_used_at=timezone.now() - timedelta(minutes=61))
    assert sync_tools()["idle"] == 1
    tool.refresh_from_db()
    assert tool.state == Tool.State.STOPPED and "60 minutes" in tool.message
    with translation.override("zh-hans"):
        assert "60" in tool.message_words and "minutes" not in tool.message_words
    event = JobEvent.objects.filter(job=scalars_job, item="tensorboard").order_by("-id").first()
    assert "Nobody used it for 60 minutes." in event.message
    folder = settings.RUNS_DIR / tool.workload_id
    assert folder.exists()
    Tool.objects.filter(pk=tool.pk).update(stopped_at=timezone.now() - timedelta(minutes=2))
    assert sync_tools()["cleaned"] == 1
    assert not folder.exists()


def test_a_tensorboard_for_a_job_that_wrote_nothing_says_so(asgi_web, alice, vision):
    job = JobFactory(owner=alice, project=vision)
    with live_session(asgi_web, alice) as session:
        answer = session.post(f"/jobs/{job.pk}/tensorboard/")
        assert "The job has written nothing yet" in answer.text
        assert not Tool.objects.filter(job=job).exists()
