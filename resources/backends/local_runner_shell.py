"""The debug terminal's shell in a local replica (SPEC J20), and what is kept for it.

:func:`open_shell` starts ``python -m resources.backends.local_runner_shell <folder> <replica>``
on a new terminal (a PTY whose master the caller keeps). That small program, as the
replica's own processes are started by the supervisor, takes the terminal as its controlling
one, enters a mount namespace made from the replica's isolation plan in ``launch.json`` (the
very plan the supervisor applied before exec, see local_runner_isolation), becomes the
workload's identity, takes the replica's environment and working folder, and execs an
interactive bash (sh where there is none). So the shell sees what the job sees and nothing
more, and cannot touch other users' jobs.

It is not a replica process: it carries no marker variable, so the runner's orphan hunt and
usage sampling leave it alone; whoever opened it ends it (closing the master hangs the
terminal up, then its session is killed: :func:`end_on_terminal`). It asks the kernel to kill
it should the web process that opened it die.

:func:`discard_kept` frees an ended workload's replica folders (workspace, home, tmp) once
nobody may debug it any more; logs and status stay for the job's page.

Imports nothing of the console but the runner's host helpers: the program runs outside it.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import logging
import os
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import psutil

from resources.backends.base import Shell, ShellUnavailable
from resources.backends.local_runner_host import MARKER, read_json
from resources.backends.local_runner_isolation import isolate
from resources.backends.local_runner_prepare import DEFAULT_PATH

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PR_SET_PDEATHSIG = 1
DISCARDED = ".discarded"  # in the workload folder: its replicas' scratch is gone
SCRATCH = ("workspace", "home", "tmp")

log = logging.getLogger(__name__)


def set_size(fd: int, rows: int, cols: int) -> None:
    """The terminal's size, as the browser's window now has it."""
    rows, cols = max(1, min(rows, 1000)), max(1, min(cols, 1000))
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def open_shell(folder: Path, replica: str, rows: int, cols: int, folders: dict[str, str]) -> Shell:
    """``folders``: host folder -> job path, for what the shell prints."""
    launch = read_json(folder / "launch.json")
    if launch is None:
        raise ShellUnavailable("the job's nodes are not laid out yet")
    if (folder / DISCARDED).exists():
        raise ShellUnavailable("the job's workspace was cleaned")
    if not any(spec["name"] == replica for spec in launch["replicas"]):
        raise ShellUnavailable(f"the job has no node {replica}")
    pid, master = start_on_terminal(
        ["resources.backends.local_runner_shell", str(folder), replica], rows, cols
    )
    return Shell(pid=pid, fd=master, folders=folders)


def start_on_terminal(
    module_args: list[str], rows: int, cols: int, pass_fds: tuple[int, ...] = ()
) -> tuple[int, int]:
    """``python -m <module_args>`` leading a session of its own on a new terminal of
    ``rows`` x ``cols``: (its pid, the terminal's master, non-blocking). The caller reaps it
    (os.waitpid); the program makes the terminal its controlling one (TIOCSCTTY)."""
    master, slave = os.openpty()
    try:
        set_size(slave, rows, cols)
        process = subprocess.Popen(
            [sys.executable, "-m", *module_args],
            stdin=slave, stdout=slave, stderr=slave, cwd="/", pass_fds=pass_fds,
            env={"PATH": os.environ.get("PATH", DEFAULT_PATH), "PYTHONPATH": str(PROJECT_ROOT)},
            start_new_session=True,  # its own session: the terminal becomes its controlling one
        )  # fmt: skip
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    # The caller reaps it (os.waitpid); subprocess must not reap it behind its back.
    process.returncode = 0
    os.set_blocking(master, False)
    return process.pid, master


def end_on_terminal(pid: int, fd: int) -> None:
    """The end of what :func:`start_on_terminal` started: hang the terminal up, kill the
    program's session (a shell's background jobs' groups too) and reap the program, so no
    process or zombie is left."""
    with contextlib.suppress(OSError):
        os.close(fd)
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if process.pid != pid and os.getsid(process.pid) == pid:
                process.kill()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.02)
    log.warning("terminal program %s did not end on SIGKILL", pid)


def die_with_parent() -> None:
    """The terminal's program is killed when the web process that started it dies (asked
    after any identity change, which would clear it); ends at once if that is already so."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:
        os._exit(1)


def discard_kept(folder: Path) -> bool:
    """Remove the replicas' workspace, home and tmp of an ended workload (mount sources are
    only linked from the workspace: removing a link leaves its target alone)."""
    state = read_json(folder / "state.json") or {}
    if state.get("state") not in ("succeeded", "failed", "stopped"):
        return False
    try:  # once, whoever asks: the marker is made or found in one step
        os.close(os.open(folder / DISCARDED, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    for spec in (read_json(folder / "launch.json") or {}).get("replicas", []):
        for sub in SCRATCH:
            shutil.rmtree(Path(spec["dir"]) / sub, ignore_errors=True)
    return True


# --- the program: runs in the new session, on the new terminal ------------------------------


def _enter(folder: Path, name: str) -> None:
    launch = read_json(folder / "launch.json")
    spec = next(r for r in launch["replicas"] if r["name"] == name)
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    plan = spec.get("isolation")
    user = launch.get("user")
    if plan:
        isolate(plan)  # the replica's namespace, then its identity
    elif user and os.geteuid() == 0:
        os.setgroups(user.get("groups", []))
        os.setgid(user["gid"])
        os.setuid(user["uid"])
    os.chdir(spec["cwd"])
    die_with_parent()  # after the identity change, which would clear it
    env = {key: value for key, value in spec["env"].items() if key != MARKER}
    env["TERM"] = "xterm-256color"
    env["PS1"] = f"\\u@{name}:\\w\\$ "
    bash = shutil.which("bash", path=env.get("PATH"))
    if bash:
        os.execve(bash, [bash, "--norc", "--noprofile", "-i"], env)
    os.execve("/bin/sh", ["/bin/sh", "-i"], env)


def main(argv: list[str]) -> int:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)
    try:
        _enter(Path(argv[1]), argv[2])
    except BaseException as error:  # say it on the terminal, where the user looks
        os.write(2, f"console: could not open a shell: {error}\r\n".encode())
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
