"""A program on a terminal of its own, for the debug terminal's shells of every backend
(SPEC J20): started leading a new session on a PTY whose master the caller keeps, resized as
the browser's window is, and ended leaving no process or zombie behind.

Imports nothing of the console: the programs it starts run outside it."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import logging
import os
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import psutil

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PR_SET_PDEATHSIG = 1

log = logging.getLogger(__name__)


def set_size(fd: int, rows: int, cols: int) -> None:
    """The terminal's size, as the browser's window now has it."""
    rows, cols = max(1, min(rows, 1000)), max(1, min(cols, 1000))
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


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
            env={"PATH": os.environ.get("PATH", os.defpath), "PYTHONPATH": str(PROJECT_ROOT)},
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
