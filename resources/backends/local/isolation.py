"""What a local job may see of this machine's folders: its own, and nothing of anyone else's.

Each replica starts in a mount namespace of its own (as a container would), prepared in the
child between fork and exec, while it is still root:

* the *hidden* folders — the storage root and the runs folder — are covered by an empty
  tmpfs, so other users' data, other jobs' workspaces and logs are simply not there;
* the replica's own folder (workspace, home, tmp, its plan files) and each of its mount
  sources are put back at the very paths they have on the machine (path rewriting and the
  workspace's links keep working), read-only mounts as read-only mounts;
* then it becomes the job owner's identity (user, group, the groups of their projects).

Processes of different identities cannot signal or trace each other, nor read each other's
``/proc/<pid>/environ``. The machine's programs (``/usr``, the runtimes) stay visible.

The sources are cloned with ``open_tree`` before the tmpfs covers them, because a plain bind
mount cannot take its source from the namespace the process has just left.

Imports nothing of the console: the supervisor runs it.
"""

from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
AT_FDCWD = -100
OPEN_TREE_CLONE = 1
OPEN_TREE_CLOEXEC = 0o2000000
AT_RECURSIVE = 0x8000
MOVE_MOUNT_F_EMPTY_PATH = 4
# System call numbers of open_tree and move_mount (Linux 5.2+), the same on both.
SYSCALLS = {"x86_64": (428, 429), "aarch64": (428, 429)}

_libc = None


def _lib():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
        _libc.syscall.restype = ctypes.c_long
    return _libc


def _checked(result: int, what: str) -> int:
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")
    return result


def _mount(source, target: str, kind, flags: int, data=None) -> None:
    encode = lambda text: text.encode() if text is not None else None  # noqa: E731
    result = _lib().mount(encode(source), target.encode(), encode(kind), flags, encode(data))
    _checked(result, f"mount {target}")


def _clone_tree(path: str) -> int:
    open_tree = SYSCALLS[platform.machine()][0]
    flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE
    return _checked(
        _lib().syscall(open_tree, ctypes.c_int(AT_FDCWD), path.encode(), ctypes.c_uint(flags)),
        f"clone {path}",
    )


def _attach(tree: int, target: str) -> None:
    move_mount = SYSCALLS[platform.machine()][1]
    _checked(
        _lib().syscall(
            move_mount,
            ctypes.c_int(tree),
            b"",
            ctypes.c_int(AT_FDCWD),
            target.encode(),
            ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH),
        ),
        f"attach {target}",
    )


def outermost(folders: list[str]) -> list[str]:
    """The folders not inside another of them (covering a parent hides its children)."""
    kept: list[str] = []
    for folder in sorted({str(Path(f)) for f in folders}, key=len):
        if not any(folder == k or folder.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(folder)
    return kept


def isolate(plan: dict) -> None:
    """Run in the child before exec (as root): ``plan`` is ``{"hidden": [folders],
    "binds": [[path, read_only], ...], "uid", "gid", "groups", "cwd"}``."""
    os.unshare(os.CLONE_NEWNS)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we do here leaks to the machine
    binds = sorted(plan["binds"], key=lambda bind: len(bind[0]))
    trees = [(path, read_only, os.path.isdir(path), _clone_tree(path)) for path, read_only in binds]
    for folder in outermost(plan["hidden"]):
        if os.path.isdir(folder):
            _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    for path, read_only, folder, tree in trees:
        if folder:
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if not os.path.exists(path):
                open(path, "a").close()
        _attach(tree, path)
        os.close(tree)
        flags = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | (MS_RDONLY if read_only else 0)
        _mount(None, path, None, flags)
    os.chdir(plan["cwd"])
    os.setgroups(plan["groups"])
    os.setgid(plan["gid"])
    os.setuid(plan["uid"])


def supported() -> bool:
    """Whether this process may isolate jobs: root, on a machine whose calls we know."""
    return os.geteuid() == 0 and platform.machine() in SYSCALLS


def isolate_saying_why(plan: dict) -> None:
    """In the replica's child, before exec: say why on its log (its stderr) if it fails."""
    try:
        isolate(plan)
    except BaseException as error:
        os.write(2, f"console: could not isolate the job: {error}\n".encode())
        raise
