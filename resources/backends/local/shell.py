"""The debug terminal's shell in a local replica (SPEC J20), and what is kept for it.

:func:`open_shell` starts ``python -m resources.backends.local.shell <folder> <replica>``
on a new terminal (a PTY whose master the caller keeps). That small program, as the
replica's own processes are started by the supervisor, takes the terminal as its controlling
one, enters a mount namespace made from the replica's isolation plan in ``launch.json`` (the
very plan the supervisor applied before exec, see local_runner_isolation), becomes the
workload's identity, takes the replica's environment and working folder, and execs an
interactive bash (sh where there is none). So the shell sees what the job sees and nothing
more, and cannot touch other users' jobs.

It is not a replica process: it carries no marker variable, so the runner's orphan hunt and
usage sampling leave it alone; whoever opened it ends it (closing the master hangs the
terminal up, then its session is killed: ``Shell.end``). It asks the kernel to kill
it should the web process that opened it die.

:func:`discard_kept` frees an ended workload's replica folders (workspace, home, tmp) once
nobody may debug it any more; logs and status stay for the job's page.

Imports nothing of the console but the runner's host helpers: the program runs outside it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import signal
import sys
import termios
from pathlib import Path

from resources.backends.base import Shell, ShellUnavailable
from resources.backends.local.host import MARKER, read_json
from resources.backends.local.isolation import isolate
from resources.backends.terminal import die_with_parent, start_on_terminal

DISCARDED = ".discarded"  # in the workload folder: its replicas' scratch is gone
SCRATCH = ("workspace", "home", "tmp")

log = logging.getLogger(__name__)


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
        ["resources.backends.local.shell", str(folder), replica], rows, cols
    )
    return Shell(pid=pid, fd=master, folders=folders)


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
