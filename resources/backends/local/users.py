"""Who a job's processes run as on this machine, and what it takes for them to reach their
folders: the unprivileged job user (root ignores file permissions), identities made on first
use, and mount sources opened to exactly the access a job is given. Imports neither Django nor
the rest of the console: the supervisor uses it too."""

from __future__ import annotations

import contextlib
import errno
import grp
import os
import pwd
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from resources.backends.local.host import IDENTITY_LOCK, locked

JOB_USER = "console-job"


FALLBACK_USER = "nobody"


@dataclass(frozen=True)
class JobUser:
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...] = ()


def job_user() -> JobUser | None:
    """Who job processes run as. Root ignores file permissions, so a root console runs jobs as
    an unprivileged system user (created once; ``nobody`` if that fails), which is what makes
    read-only mounts read-only. Any other user runs jobs as itself: it cannot switch users,
    and read-only mounts are then a convention only."""
    if os.geteuid() != 0:
        return None
    for attempt in range(2):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(JOB_USER)
            return JobUser(entry.pw_name, entry.pw_uid, entry.pw_gid)
        if attempt == 0:
            # A concurrent useradd may win; the second lookup finds its user either way.
            subprocess.run(
                ["useradd", "--system", "--user-group", "--no-create-home", "--home-dir",
                 "/nonexistent", "--shell", "/usr/sbin/nologin", JOB_USER],
                capture_output=True,
                check=False,
            )  # fmt: skip
    entry = pwd.getpwnam(FALLBACK_USER)
    return JobUser(entry.pw_name, entry.pw_uid, entry.pw_gid)


def identity_user(uid: int, gid: int, groups: tuple[int, ...], name: str) -> JobUser:
    """A console user's own identity as a user of this machine (root only), created once.

    The numbers are the console's (resources.inventory.identity); names only make ``id`` and ``ls``
    readable, and OpenMPI and getpass want a passwd entry. Another account already holding
    the number would share files and signals with the job: that is refused, not papered over.
    """
    with locked(_identity_lock()):
        for number, group_name in ((gid, name), *((g, f"console-g{g}") for g in groups)):
            try:
                grp.getgrgid(number)
            except KeyError:
                _run("groupadd", "--gid", str(number), group_name)
        try:
            entry = pwd.getpwuid(uid)
        except KeyError:
            _run("useradd", "--uid", str(uid), "--gid", str(gid), "--no-create-home",
                 "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name)  # fmt: skip
            entry = pwd.getpwuid(uid)
    if entry.pw_name != name:
        raise OSError(errno.EEXIST, f"user number {uid} belongs to {entry.pw_name!r}, not {name}")
    return JobUser(name, uid, gid, tuple(groups))


def _identity_lock() -> Path:
    if not IDENTITY_LOCK.exists():
        IDENTITY_LOCK.touch()
    return IDENTITY_LOCK


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise OSError(f"{argv[0]} failed: {done.stderr.strip() or done.returncode}")


def unreachable_ancestor(path: Path, user: JobUser | None) -> Path | None:
    """The first folder on the way to ``path`` that ``user`` may not enter, if any."""
    if user is None:
        return None
    for folder in reversed(Path(path).parents):
        info = folder.stat()
        if info.st_uid == user.uid:
            bit = stat.S_IXUSR
        elif info.st_gid == user.gid or info.st_gid in user.groups:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not info.st_mode & bit:
            return folder
    return None


def searchable_path(path: str, user: JobUser | None) -> str:
    """``PATH`` without the folders the job user cannot search (a root console's own
    ``/root/...`` entries): a program found in none of the rest is then "not found", as a
    shell would say, not "permission denied" from a folder the job never had."""
    if user is None:
        return path
    kept = []
    for entry in path.split(":"):
        folder = Path(entry)
        usable = folder.is_absolute() and folder.is_dir()
        if usable and unreachable_ancestor(folder / "program", user) is None:
            kept.append(entry)
    return ":".join(dict.fromkeys(kept))


def give_to(path: Path, user: JobUser | None) -> None:
    """Make a folder we created the job's own (its workspace, home, tmp)."""
    if user is not None:
        os.chown(path, user.uid, user.gid)


def open_source(source: Path, *, read_only: bool) -> None:
    """Permissions of a mount source for a job that runs in its own mount namespace
    (local_runner_isolation): only the jobs that mount it see it at all, and a read-only
    mount is read-only whatever the modes, so the modes only have to let any job identity
    in — read for every mount, write for writable ones. Nothing changes owner, so two jobs
    of different users may share a volume at once."""
    for entry in _tree(source):
        info = entry.lstat()
        if stat.S_ISLNK(info.st_mode):
            continue
        mode = info.st_mode | stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
        if not read_only:
            mode |= stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
        if stat.S_ISDIR(info.st_mode) or info.st_mode & stat.S_IXUSR:
            mode |= stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
        if stat.S_ISDIR(info.st_mode) and not read_only:
            mode |= stat.S_ISVTX  # like /tmp: one user's job cannot delete another's files
        if stat.S_IMODE(mode) != stat.S_IMODE(info.st_mode):
            os.chmod(entry, stat.S_IMODE(mode))


def prepare_source(source: Path, user: JobUser | None, *, read_only: bool) -> None:
    """Permissions of a mount source, so that the job user can read it and write it only if
    the mount is writable.

    Without mount namespaces the job sees the source itself, so its permissions are the
    mount's mode: a read-only source is owned by root and writable by nobody else (an earlier
    job's files in it are taken back), every entry readable by others; a writable source is
    the job user's. Walks the whole tree: mounting costs one stat per entry.
    """
    if user is None:
        return
    for entry in _tree(source):
        info = entry.lstat()
        if stat.S_ISLNK(info.st_mode):
            continue  # its target is someone else's business; chmod would follow it
        if read_only:
            owner = 0 if info.st_uid == user.uid else info.st_uid
            group = 0 if info.st_gid == user.gid else info.st_gid
            if (owner, group) != (info.st_uid, info.st_gid):
                os.chown(entry, owner, group)
            mode = info.st_mode & ~(stat.S_IWGRP | stat.S_IWOTH) | stat.S_IROTH
            if stat.S_ISDIR(info.st_mode) or info.st_mode & stat.S_IXUSR:
                mode |= stat.S_IXOTH
        else:
            if info.st_uid != user.uid:
                os.chown(entry, user.uid, user.gid)
            mode = info.st_mode | stat.S_IRUSR | stat.S_IWUSR
            if stat.S_ISDIR(info.st_mode):
                mode |= stat.S_IXUSR
        if stat.S_IMODE(mode) != stat.S_IMODE(info.st_mode):
            os.chmod(entry, stat.S_IMODE(mode))


def _tree(root: Path) -> Iterator[Path]:
    yield root
    if root.is_dir() and not root.is_symlink():
        for folder, folders, files in os.walk(root):
            for name in (*folders, *files):
                yield Path(folder, name)
