"""What the local runner's process tests share (no tests here): a runner under tmp_path that
kills whatever its workloads left when the test ends, however it ends, and small builders.

Each test module wraps :func:`running` in a fixture of its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

from resources.backends.base import ReplicaSpec, Workload, WorkloadStatus
from resources.backends.local import host
from resources.backends.local.runner import LocalRunner
from tests.helpers import wait_until


@dataclasses.dataclass(frozen=True)
class Mounted:
    """A mount as jobs.launch takes it (resources.catalog.mounts.Mount without catalog details)."""

    source: str
    target: str
    read_only: bool


def let_job_user_in(path: Path) -> None:
    """pytest makes its temporary folders 0700; the unprivileged job user must be able to
    pass through them (search only, no listing) to reach its workspace."""
    if os.geteuid() != 0:
        return
    for folder in (*reversed(path.parents), path):
        info = folder.stat()
        if info.st_uid == 0 and not info.st_mode & stat.S_IXOTH:
            folder.chmod(stat.S_IMODE(info.st_mode) | stat.S_IXOTH)


class Runs:
    def __init__(self, tmp_path: Path):
        let_job_user_in(tmp_path)
        self.root = tmp_path / "runs"
        self.storage = tmp_path / "storage"
        self.storage.mkdir(exist_ok=True)
        self.runner = LocalRunner(self.root)

    # --- building ----------------------------------------------------------------------------

    def program(self, name: str, code: str, folder: str = "algorithm") -> Path:
        """A small program in the storage, as an uploaded algorithm would be."""
        path = self.storage / folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code).lstrip())
        path.chmod(0o755)
        return path

    def folder(self, name: str) -> Path:
        path = self.storage / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    # --- watching ----------------------------------------------------------------------------

    def wait(self, workload_id: str, timeout: float = 20) -> WorkloadStatus:
        return wait_until(
            lambda: (s := self.runner.poll(workload_id)).state.finished and s, timeout, 0.05
        )

    def log(self, workload_id: str, replica: str) -> str:
        text, _ = self.runner.logs(workload_id, replica, 0, 1 << 20)
        return text

    def wait_for_log(self, workload_id: str, replica: str, text: str, timeout: float = 20):
        wait_until(lambda: text in self.log(workload_id, replica), timeout, 0.05)

    def workload_folder(self, workload_id: str) -> Path:
        return (self.root / workload_id).resolve()

    def replica_pids(self, workload_id: str) -> list[int]:
        pids = []
        for path in self.workload_folder(workload_id).glob("*/pid"):
            pids.append(int(path.read_text().split()[0]))
        return pids

    def leftovers(self, workload_id: str) -> list[psutil.Process]:
        """Anything of the workload still running: its supervisor, its marked processes and
        every member of its replicas' process groups. Zombies run nothing and do not count."""
        folder = self.workload_folder(workload_id)
        found = {p.pid: p for p in host.marked_processes(str(folder))}
        supervisor = host.read_json(folder / "supervisor.json")
        if host.is_alive(supervisor):
            with contextlib.suppress(psutil.Error):
                found[supervisor["pid"]] = psutil.Process(supervisor["pid"])
        groups = set(self.replica_pids(workload_id))
        for process in psutil.process_iter():
            with contextlib.suppress(OSError):
                if os.getpgid(process.pid) in groups:
                    found[process.pid] = process
        alive = []
        for process in found.values():
            with contextlib.suppress(psutil.Error):
                if process.status() != psutil.STATUS_ZOMBIE:
                    alive.append(process)
        return alive

    def nothing_left(self, workload_id: str, settle: float = 2.0) -> bool:
        """True once no process of the workload runs; the supervisor may take a moment to
        exit after writing the final state."""
        deadline = time.monotonic() + settle
        while self.leftovers(workload_id):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    # --- ending ------------------------------------------------------------------------------

    def close(self) -> None:
        """Kill every process any workload of this root started, even after a failed test."""
        if not self.root.exists():
            return
        for entry in self.root.iterdir():
            record = host.read_json(entry / "workload.json") if not entry.is_symlink() else None
            if record is not None:
                with contextlib.suppress(Exception):
                    self.runner.cleanup(record["id"])
        kill_marked_under(self.root)


def kill_marked_under(root: Path) -> None:
    """Kill every process the local backend started for a workload folder under ``root``."""
    prefix = str(root)
    stray = [
        process
        for marker, processes in _marked().items()
        if marker.startswith(prefix)
        for process in processes
    ]
    host.kill_processes(stray, 0)


def _marked() -> dict[str, list[psutil.Process]]:
    found: dict[str, list[psutil.Process]] = {}
    for process in psutil.process_iter():
        with (
            contextlib.suppress(OSError),
            open(f"/proc/{process.pid}/environ", "rb") as handle,
        ):
            for item in handle.read().split(b"\0"):
                if item.startswith(host.MARKER.encode() + b"="):
                    found.setdefault(item.split(b"=", 1)[1].decode(), []).append(process)
    return found


@contextlib.contextmanager
def running(tmp_path: Path) -> Iterator[Runs]:
    runs = Runs(tmp_path)
    try:
        yield runs
    finally:
        runs.close()


def replica(name: str, argv: tuple[str, ...] | list[str], **fields) -> ReplicaSpec:
    """``job-worker-1`` -> role worker, index 1."""
    role, index = name.rsplit("-", 2)[-2:]
    return ReplicaSpec(name=name, role=role, index=int(index), argv=tuple(argv), **fields)


def workload_from_plan(plan, workload_id: str, *, graceful_seconds: int = 5) -> Workload:
    """What the jobs side will do with a launch plan: one replica per plan replica, placed on
    one local node, holding board slots 0.. of its node."""
    replicas = tuple(r.placed("local", tuple(range(int(r.boards + 0.999)))) for r in plan.replicas)
    return Workload(
        id=workload_id,
        replicas=replicas,
        graceful_seconds=graceful_seconds,
        wait_for_peers=plan.wait_for_peers,
        peer_timeout_seconds=20,
    )


def elapsed(since: float) -> float:
    return time.monotonic() - since
