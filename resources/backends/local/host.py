"""What the local runner needs from this machine: small state files, process identity, the
unprivileged job user, permissions of mount sources and loopback address blocks.

Shared by the runner (in the console's processes) and the supervisor (one process per
workload), so it imports neither Django nor the rest of the console.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import json
import os
import random
import signal
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

# Every process of a workload carries this variable (the workload folder), so that the
# runner can find them again after its supervisor died, even those that left the process
# group of their replica.
MARKER = "CONSOLE_LOCAL_RUN"


# Machine-wide, not per runner root: every runner on this machine (tests of several people,
# the console itself) hands out loopback blocks from the same 127.0.0.0/8.
ADDRESS_REGISTRY = Path("/tmp/console-local-addresses")


# --- state files ---------------------------------------------------------------------------


def write_json(path: Path, data: object, mode: int = 0o644) -> None:
    """Atomically: a reader in another process sees the old or the new content, never half.
    The temporary file is the writer's own (process and thread): two threads of one web or
    worker process may write the same file at once (a usage sample, say)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
    os.chmod(temporary, mode)
    os.replace(temporary, path)


def read_json(path: Path, default: object = None):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        return default


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock between processes (released when the holder dies)."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# --- processes -------------------------------------------------------------------------------


def start_ticks(pid: int) -> int | None:
    """When the process started, in clock ticks since boot: with the pid, an identity that a
    reused pid cannot fake. None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may hold spaces and parentheses: count after the last ")".
    fields = text[text.rindex(b")") + 2 :].split()
    if fields[0] == b"Z":
        return None  # a zombie runs nothing any more
    return int(fields[19])


def identity(pid: int) -> dict[str, int] | None:
    ticks = start_ticks(pid)
    return None if ticks is None else {"pid": pid, "start": ticks}


def is_alive(record: dict | None) -> bool:
    """Whether the process recorded as ``{"pid", "start"}`` still runs (the same one)."""
    return bool(record) and start_ticks(record["pid"]) == record["start"]


def reaped() -> Iterator[tuple[int, int, int]]:
    """(pid, exit code, signal) of every child that has ended, without waiting; a child
    killed by a signal gets 128 + the signal's number as its code, as a shell says it, and
    the signal (else 0)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        code = os.waitstatus_to_exitcode(status)
        yield pid, code if code >= 0 else 128 - code, max(0, -code)


def signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def group_members(pgid: int) -> list:
    """Processes of one process group (a replica, with whatever it started)."""
    import psutil

    members = []
    for process in psutil.process_iter():
        with contextlib.suppress(OSError):
            if os.getpgid(process.pid) == pgid:
                members.append(process)
    return members


def marked_processes(marker: str | None = None):
    """Processes whose environment carries ``MARKER=marker``: the workload's, and only its
    (the marker is the workload's folder, which no other workload shares). Without a marker:
    every marked process, by marker, from one pass over the process table."""
    import psutil  # only where needed: the supervisor's start stays quick

    found: dict[str, list] = {}
    prefix = f"{MARKER}=".encode()
    for process in psutil.process_iter():
        if process.pid == os.getpid():
            continue
        try:
            with open(f"/proc/{process.pid}/environ", "rb") as handle:
                environ = handle.read().split(b"\0")
        except OSError:
            continue  # gone, or not ours to read
        for item in environ:
            if item.startswith(prefix):
                found.setdefault(item[len(prefix) :].decode(errors="replace"), []).append(process)
    return found if marker is None else found.get(marker, [])


def kill_processes(processes: list, graceful: float) -> int:
    """SIGTERM, then SIGKILL whatever is left after ``graceful`` seconds (at once when 0);
    returns how many were signalled. Waits for them to end, at most a few seconds."""
    live = [p for p in processes if p is not None and not _ended(p)]
    for process in live:
        _send(process, signal.SIGTERM if graceful > 0 else signal.SIGKILL)
    if graceful > 0:
        left = _wait(live, graceful)
        for process in left:
            _send(process, signal.SIGKILL)
    _wait(live, 3)
    return len(live)


def _send(process, signum: int) -> None:
    import psutil

    with contextlib.suppress(psutil.Error):
        process.send_signal(signum)


def _ended(process) -> bool:
    """Gone, or a zombie: an orphan's zombie waits for whatever reaps orphans here (PID 1),
    which is none of our business and runs nothing."""
    import psutil

    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _wait(processes: list, timeout: float) -> list:
    deadline = time.monotonic() + timeout
    left = [p for p in processes if not _ended(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if not _ended(p)]
    return left


# --- the job user ----------------------------------------------------------------------------


IDENTITY_LOCK = Path("/tmp/console-local-identities.lock")


# --- loopback address blocks -------------------------------------------------------------------


def reserve_block(owner: str, registry: Path = ADDRESS_REGISTRY) -> tuple[int, int]:
    """A free 127.B.C.0/24 for one workload, recorded as ``B.C`` -> ``owner`` (its folder).

    A reservation whose owner folder is gone or whose workload has finished is stale and is
    taken over; all of it under one lock, so two runners never pick the same block.
    127.0.x.x is left alone (localhost, Debian's 127.0.1.1 host name).
    """
    _ensure_registry(registry)
    with locked(registry / ".lock"):
        taken = {entry.name for entry in registry.iterdir() if not entry.name.startswith(".")}
        # Random picks first (fewer surprises with anything else using 127.x), then all.
        guesses = [(random.randint(1, 255), random.randint(0, 255)) for _ in range(64)]
        every = ((b, c) for b in range(1, 256) for c in range(256))
        for block in itertools.chain(guesses, every):
            name = f"{block[0]}.{block[1]}"
            if name in taken and not _stale(registry / name):
                continue
            path = registry / name
            path.write_text(owner)
            return block
    raise OSError(errno.EADDRNOTAVAIL, "every loopback address block is in use")


def release_block(block: tuple[int, int], owner: str, registry: Path = ADDRESS_REGISTRY) -> None:
    path = registry / f"{block[0]}.{block[1]}"
    with contextlib.suppress(FileNotFoundError), locked(registry / ".lock"):
        if path.read_text() == owner:
            path.unlink()


def _stale(reservation: Path) -> bool:
    try:
        owner = Path(reservation.read_text())
    except FileNotFoundError:
        return True
    state = read_json(owner / "state.json", None) if owner.is_dir() else None
    if state is None:
        # Being submitted right now (the folder appears when it is complete) or gone for
        # good: only the second is stale, and a submission takes seconds, not minutes.
        return time.time() - reservation.stat().st_mtime > 600
    return state.get("state") in ("succeeded", "failed", "stopped")


def make_dirs(path: Path, mode: int = 0o755) -> None:
    """``mkdir -p`` with ``mode`` on every folder it creates, whatever the umask of the
    process calling (the job user must be able to enter them)."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        folder.mkdir(exist_ok=True)
        os.chmod(folder, mode)


def _ensure_registry(registry: Path) -> None:
    registry.mkdir(mode=0o755, exist_ok=True)
    # Sticky and open to all, like /tmp: consoles running as other users share the blocks.
    if stat.S_IMODE(registry.stat().st_mode) != 0o1777 and registry.stat().st_uid == os.getuid():
        os.chmod(registry, 0o1777)
