"""Prepared data on the local backend's nodes (SPEC J19, seed 000 "数据准备"): copies of
datasets on a node's fast local storage, reused while current, deleted once unused for the
admin's number of days.

Layout, under the cache folder (``NODE_CACHE_DIR``; one folder per node, since every local
node is this machine)::

    <cache>/<node>/data/<key>/            one dataset folder (key: a digest of its source path)
        .lock                             held while a copy is made or deleted
        <fingerprint>/                    a complete copy of the source as it was
        <fingerprint>.use                 shared-locked by every live workload using the copy;
                                          its mtime is when a workload last used it
        .copy-<random>/                   a copy under way (renamed to <fingerprint> when done)

Whether a copy is still current: the fingerprint is a digest of every file's relative path,
size and modification time (and every folder's path), read with one ``stat`` per entry and
no byte of content. It is cheap next to the copy (a dataset of many GB has thousands of
files, not millions of reads), and it changes whenever a file is added, removed, rewritten
or resized; a write that keeps both size and mtime (only possible by setting the mtime back
on purpose) would go unnoticed. A changed source gets a new folder; the old copy stays for
the jobs still using it and goes when it has been unused for long enough.

Two workloads preparing the same dataset on one node at once: the key's lock lets one copy
while the other waits, then finds the copy made and reuses it. A copy is written to a
temporary folder and renamed only when complete, so nobody ever mounts half a copy, and a
copy interrupted (stop, disk full, a supervisor killed) leaves only a temporary folder that
the next preparation or clean-up removes.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import shutil
import stat
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CHUNK = 1 << 20  # bytes copied between two looks at the stop request and the progress
COPY_PREFIX = ".copy-"


class Stopped(Exception):
    """The workload was asked to stop while its data was being prepared."""


class PrepareFailed(Exception):
    """The copy could not be made (source missing, disk full...): said in plain words."""


@dataclass(frozen=True)
class Prepared:
    path: Path  # the copy, mounted read-only in place of the source
    total: int  # bytes
    reused: bool
    seconds: float
    use: int  # file descriptor of the shared lock on <fingerprint>.use; held while in use


def key_of(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:24]


def node_folder(cache: Path, node: str) -> Path:
    return cache / node / "data"


def fingerprint(source: Path) -> tuple[str, int]:
    """(digest, total bytes) of ``source`` as it is now: paths, sizes and mtimes only."""
    digest = hashlib.sha256()
    total = 0
    for folder, dirs, files in os.walk(source):
        dirs.sort()
        relative = os.path.relpath(folder, source)
        digest.update(f"d {relative}\n".encode())
        for name in sorted(files):
            info = os.lstat(os.path.join(folder, name))
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
            digest.update(f"f {relative}/{name} {info.st_size} {info.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32], total


def prepare(
    cache: Path,
    node: str,
    source: Path,
    *,
    progress: Callable[[int, int], None],
    stop_requested: Callable[[], bool],
) -> Prepared:
    """The node's current copy of ``source``: reused if there, else made. ``progress(done,
    total)`` is called as bytes are copied; ``stop_requested()`` True aborts (``Stopped``)."""
    started = time.monotonic()
    if not source.is_dir():
        raise PrepareFailed("the dataset's folder does not exist")
    folder = node_folder(cache, node) / key_of(str(source))
    folder.mkdir(parents=True, exist_ok=True, mode=0o755)
    _let_in(cache, folder)
    with _locked(folder / ".lock", stop_requested):
        digest, total = fingerprint(source)
        copy = folder / digest
        reused = copy.is_dir()
        if not reused:
            _remove_unfinished(folder)
            progress(0, total)
            temporary = folder / f"{COPY_PREFIX}{uuid.uuid4().hex[:8]}"
            try:
                copy_tree(source, temporary, total, progress, stop_requested)
                _read_only(temporary)
                temporary.rename(copy)
            except BaseException:
                shutil.rmtree(temporary, ignore_errors=True)
                raise
        # Taken before the key's lock is let go: a clean-up can never slip in between.
        use = _hold(folder / f"{digest}.use")
    return Prepared(copy, total, reused, time.monotonic() - started, use)


def release(prepared: Prepared) -> None:
    """The workload no longer uses the copy: its unused time counts from now."""
    with contextlib.suppress(OSError):
        os.utime(prepared.use)
        os.close(prepared.use)


def copy_tree(
    source: Path,
    target: Path,
    total: int,
    progress: Callable[[int, int], None],
    stop_requested: Callable[[], bool],
) -> None:
    """Copy regular files and folders (links are left out: they could lead outside the
    dataset), calling ``progress`` at most every half second and at the end."""
    try:
        _copy(source, target, total, progress, stop_requested)
    except FileNotFoundError as error:
        name = os.path.basename(error.filename or "")
        raise PrepareFailed(f"a file of the dataset vanished during the copy: {name}") from None
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise PrepareFailed("the node's fast storage is full") from None
        raise PrepareFailed(f"the copy failed: {error.strerror}") from None


def _copy(source, target, total, progress, stop_requested) -> None:
    done, said_at = 0, 0.0
    target.mkdir(mode=0o755)
    for folder, dirs, files in os.walk(source):
        dirs.sort()
        here = target / os.path.relpath(folder, source)
        for name in dirs:
            if not os.path.islink(os.path.join(folder, name)):
                (here / name).mkdir(mode=0o755)
        for name in sorted(files):
            path = os.path.join(folder, name)
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            with open(path, "rb") as reader, open(here / name, "wb") as writer:
                while chunk := reader.read(CHUNK):
                    writer.write(chunk)
                    done += len(chunk)
                    if stop_requested():
                        raise Stopped
                    if time.monotonic() - said_at >= 0.5:
                        progress(done, total)
                        said_at = time.monotonic()
            shutil.copystat(path, here / name)
    progress(done, total)


def clean(cache: Path, unused_seconds: float, now: float | None = None) -> list[Path]:
    """Delete every copy unused for more than ``unused_seconds`` (and copies left half-made),
    never one a live workload holds. Returns what was deleted."""
    now = time.time() if now is None else now
    removed = []
    for node in sorted(cache.iterdir()) if cache.is_dir() else ():
        data = node / "data"
        for folder in sorted(data.iterdir()) if data.is_dir() else ():
            try:
                lock = _try_lock(folder / ".lock")
            except BlockingIOError:
                continue  # a copy is being made there right now
            try:
                removed += _clean_one(folder, unused_seconds, now)
            finally:
                os.close(lock)
    return removed


def _clean_one(folder: Path, unused_seconds: float, now: float) -> list[Path]:
    removed = []
    _remove_unfinished(folder)
    for copy in sorted(p for p in folder.iterdir() if p.is_dir()):
        marker = folder / f"{copy.name}.use"
        use = None
        if marker.exists():
            try:
                use = _try_lock(marker)
            except BlockingIOError:
                continue  # a live workload mounts it
        try:
            last = (marker if use is not None else copy).stat().st_mtime
            if now - last > unused_seconds:
                _remove(copy)
                marker.unlink(missing_ok=True)
                removed.append(copy)
        finally:
            if use is not None:
                os.close(use)
    return removed


def _remove_unfinished(folder: Path) -> None:
    """Copies left half-made by a workload that died (only ever found under the lock)."""
    for entry in folder.iterdir():
        if entry.name.startswith(COPY_PREFIX):
            _remove(entry)


def _remove(path: Path) -> None:
    # Read-only folders cannot have entries deleted: give write back to the owner first.
    for folder, dirs, _files in os.walk(path):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)
    with contextlib.suppress(FileNotFoundError):
        os.chmod(path, 0o755)
    shutil.rmtree(path, ignore_errors=True)


def _read_only(path: Path) -> None:
    """Files 0444 and folders 0555: any job identity may read, none may write (isolated jobs
    get a read-only mount on top)."""
    for folder, dirs, files in os.walk(path, topdown=False):
        for name in files:
            os.chmod(os.path.join(folder, name), 0o444)
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o555)
    os.chmod(path, 0o555)


def _let_in(cache: Path, folder: Path) -> None:
    """Every folder from the cache down to the dataset's may be entered by a job's user."""
    path = cache
    for part in ("", *folder.relative_to(cache).parts):
        path = path / part if part else path
        with contextlib.suppress(OSError):
            mode = path.stat().st_mode
            if mode & 0o001 == 0:
                os.chmod(path, stat.S_IMODE(mode) | 0o011)


@contextlib.contextmanager
def _locked(path: Path, stop_requested: Callable[[], bool]):
    """The key's lock, waited for without blocking a stop request."""
    while True:
        try:
            handle = _try_lock(path)
            break
        except BlockingIOError:
            if stop_requested():
                raise Stopped from None
            time.sleep(0.1)
    try:
        yield
    finally:
        os.close(handle)


def _try_lock(path: Path) -> int:
    handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BaseException:
        os.close(handle)
        raise
    return handle


def _hold(path: Path) -> int:
    handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(handle, fcntl.LOCK_SH)
    os.utime(handle)
    return handle
