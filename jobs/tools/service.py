"""Starting, checking and stopping tools (SPEC O8, O9).

A tool starts from the web request that asks for it (the local backend's submit returns at
once: the process is its own supervisor's), so the page can show it as soon as it answers.
``check`` moves a starting tool to running once its socket answers HTTP, and notices one
that died; beat's ``jobs.tasks.sync_tools`` checks every live tool, stops the ones nobody
used for the admin's idle time and cleans up the stopped ones' folders.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import secrets
import socket
from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from console import limits
from console.celery import send
from console.words import Said, counted, said
from jobs import lifecycle
from jobs.models import DevEnvironment, Job, Tool
from jobs.tools import launch, sockets
from resources.backends.base import BackendError, UnknownWorkload, WorkloadState
from resources.clusters import backend_of

log = logging.getLogger(__name__)

LIVE = (Tool.State.STARTING, Tool.State.RUNNING)
# A starting tool that never answers is given up after this long (JupyterLab's first start
# builds its settings; a few seconds is usual).
START_TIMEOUT = timedelta(seconds=120)
# How often the proxy writes "used now" for one tool (it answers many requests a second).
TOUCH_SECONDS = 30


def _backend():
    return backend_of(None)


def live_tool(*, job: Job | None = None, env: DevEnvironment | None = None) -> Tool | None:
    tools = Tool.objects.filter(state__in=LIVE)
    tools = tools.filter(job=job) if job is not None else tools.filter(devenv=env)
    return tools.order_by("-created_at").first()


def open_tensorboard(job: Job, user) -> Tool:
    """The job's TensorBoard: the one already running (every viewer shares it), else a new
    one. Raises :class:`launch.Unavailable` with the reason when it cannot start."""
    with transaction.atomic():
        Job.objects.select_for_update().filter(pk=job.pk).first()  # one start at a time
        tool = live_tool(job=job)
        if tool is not None:
            return tool
        tool = _new(Tool.Kind.TENSORBOARD, user, job=job)
        workload = launch.tensorboard(tool, job)
    _start(tool, workload)
    lifecycle.record(
        job,
        said(gettext_noop("TensorBoard started by %(user)s."), user=user.get_username()),
        actor=user,
        item="tensorboard",
    )
    return tool


def open_jupyter(env: DevEnvironment, user) -> Tool:
    with transaction.atomic():
        DevEnvironment.objects.select_for_update().filter(pk=env.pk).first()
        tool = live_tool(env=env)
        if tool is not None:
            return tool
        tool = _new(Tool.Kind.JUPYTER, user, devenv=env, job=None)
        workload = launch.jupyter(tool, env)
    _start(tool, workload)
    return tool


def _new(kind: str, user, **owner_of) -> Tool:
    tool = Tool.objects.create(
        kind=kind,
        owner=user,
        workload_id=f"tool-{secrets.token_hex(8)}",
        secret=secrets.token_urlsafe(32),
        **owner_of,
    )
    tool.address = str(launch.socket_path(tool))
    tool.save(update_fields=["address"])
    return tool


def _start(tool: Tool, workload) -> None:
    try:
        _backend().submit(workload)
    except (BackendError, OSError, ValueError) as error:
        log.warning("tool %s did not start: %s", tool.pk, error)
        why = said(gettext_noop("It did not start: %(reason)s"), reason=str(error))
        _end(tool, Tool.State.FAILED, why)
        raise launch.Unavailable(why) from None


def answers(tool: Tool, timeout: float = 1.0) -> bool:
    """True when the tool answers HTTP on its socket (any status below 500)."""
    connection = _SocketConnection(tool.address, timeout)
    try:
        headers = {"Authorization": f"token {tool.secret}"}
        connection.request("GET", tool.proxy_url(), headers=headers)
        return connection.getresponse().status < 500
    except OSError:
        return False
    finally:
        connection.close()


class _SocketConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(sockets.reachable(self.path))


def check(tool: Tool) -> Tool:
    """Bring ``tool``'s state up to date: running once it answers, failed if its process
    ended or it never answered."""
    if not tool.live:
        return tool
    try:
        status = _backend().poll(tool.workload_id)
    except UnknownWorkload:
        return _end(tool, Tool.State.FAILED, said(gettext_noop("Its process is gone.")))
    if status.state.finished:
        state = Tool.State.STOPPED if status.state == WorkloadState.STOPPED else Tool.State.FAILED
        why = status.reason or "its process ended"
        return _end(tool, state, said(gettext_noop("It ended: %(why)s."), why=why), last_words=True)
    if tool.state == Tool.State.STARTING:
        if answers(tool):
            updated = Tool.objects.filter(pk=tool.pk, state=Tool.State.STARTING).update(
                state=Tool.State.RUNNING, ready_at=timezone.now(), last_used_at=timezone.now()
            )
            if updated:
                tool.refresh_from_db()
        elif timezone.now() - tool.created_at > START_TIMEOUT:
            stop(
                tool,
                said(gettext_noop("It did not answer within two minutes.")),
                state=Tool.State.FAILED,
            )
    return tool


def _last_words(tool: Tool) -> str:
    """The last line the tool printed (why it failed), as the job knows paths."""
    with contextlib.suppress(BackendError, OSError):
        backend = _backend()
        name = launch.replica_name(tool)
        size = backend.log_size(tool.workload_id, name)
        text, _ = backend.logs(tool.workload_id, name, max(0, size - 2000), 2000)
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""
    return ""


def _end(tool: Tool, state: str, message, *, last_words: bool = False) -> Tool:
    """``message``: why, a :func:`said` (worded in each reader's language) or plain text."""
    if last_words and state == Tool.State.FAILED:
        words = _last_words(tool)
        if words:
            message = said(
                gettext_noop("%(why)s Last output: %(output)s"), why=message, output=words
            )
    Tool.objects.filter(pk=tool.pk, state__in=LIVE).update(
        state=state,
        stopped_at=timezone.now(),
        message=str(message)[:500],
        message_said=message.as_json() if isinstance(message, Said) else None,
    )
    tool.refresh_from_db()
    return tool


def stop(tool: Tool, why, *, user=None, state: str = Tool.State.STOPPED) -> bool:
    """Stop ``tool`` (SIGTERM, then SIGKILL after a few seconds); False if it had ended."""
    if not tool.live:
        return False
    with contextlib.suppress(BackendError, OSError):
        _backend().stop(tool.workload_id, launch.GRACEFUL_SECONDS)
    _end(tool, state, why)
    if tool.job_id is not None and tool.kind == Tool.Kind.TENSORBOARD:
        if user is not None:
            message = said(
                gettext_noop("TensorBoard stopped by %(user)s."), user=user.get_username()
            )
        else:
            message = said(gettext_noop("TensorBoard stopped: %(why)s"), why=why)
        lifecycle.record(tool.job, message, actor=user, item="tensorboard")
    return True


def discard(tools) -> None:
    """Tools whose job or environment is being deleted (their rows go with it): once that
    commits, their processes are killed and their folders removed. Beat could not do it
    later: it finds tools by their rows."""
    workloads = [tool.workload_id for tool in tools if tool.state in LIVE or tool.address]
    for workload in workloads:
        transaction.on_commit(lambda w=workload: send("jobs.tasks.clean_up", w, None))


def forget(job: Job) -> None:
    """A deleted job's TensorBoards (``operations.forgetters``)."""
    discard(Tool.objects.filter(job=job))


def touch(tool_id: int) -> None:
    """The tool was used now (the proxy calls this at most every TOUCH_SECONDS)."""
    Tool.objects.filter(pk=tool_id, state__in=LIVE).update(last_used_at=timezone.now())


def sync() -> dict[str, int]:
    """Beat's pass over the tools: check the live ones, stop the idle ones, clean up the
    ended ones' folders."""
    done = {"checked": 0, "idle": 0, "cleaned": 0}
    minutes = limits.current().tool_idle_minutes
    idle_after = timedelta(minutes=minutes)
    now = timezone.now()
    for tool in Tool.objects.filter(state__in=LIVE).select_related("job"):
        tool = check(tool)
        done["checked"] += 1
        if tool.state == Tool.State.RUNNING and now - tool.last_used_at > idle_after:
            idle = said(
                counted(
                    "Nobody used it for %(n)s minute.", "Nobody used it for %(n)s minutes.", "n"
                ),
                n=minutes,
            )
            if stop(tool, idle):
                done["idle"] += 1
    # Ended a while ago: nobody reads its log any more; the folder goes, as a job's does.
    ended = Tool.objects.exclude(state__in=LIVE).exclude(address="")
    for tool in ended.filter(stopped_at__lt=now - timedelta(seconds=60)):
        with contextlib.suppress(BackendError, OSError):
            _backend().cleanup(tool.workload_id)
        sockets.forget(tool.address)
        Tool.objects.filter(pk=tool.pk).update(address="")
        done["cleaned"] += 1
    return done
