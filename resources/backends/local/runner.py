"""Workloads as real processes on this machine (SPEC E1): the execution half of the local backend.

On disk, ``<root>/<workload>/`` holds ``workload.json`` (what was submitted),
``launch.json`` (argv and environment of every replica, after rewriting), ``state.json``
(written by the supervisor), ``stop.json`` (a stop request), ``supervisor.json`` (its pid)
and one folder per replica: ``workspace/`` (SPEC W, symbolic links to the mount sources),
``home/``, ``tmp/``, the plan's files at their in-container paths (``etc/mpi/hostfile``),
``log.txt`` (stdout and stderr), ``pid`` and ``exit_code``.

How it stands in for a cluster, and why:

* Paths and hosts are rewritten into argv, environment and files before the start (see
  local_runner_layout): one loopback address per replica, a folder per replica as its ``/``.
  MPI launchers get ``localhost slots=<all>`` and start every rank in the entry replica.
* Users: as root, a workload with a ``run_as`` runs as that identity (made a user of this
  machine on first use, see local_runner_host) in a mount namespace of its own that hides
  the runs folder and the storage root but for its own folder and mounts (see
  local_runner_isolation): other users' jobs neither see nor signal it, and read-only
  mounts are read-only mounts. One without runs as the unprivileged ``console-job``.
* Supervision: one small process per workload (local_runner_supervisor) starts the replicas,
  waits for peers, applies the awaited/failure rules and the SIGTERM-then-SIGKILL of a stop.
  So ``submit`` and ``stop`` return at once (``stop`` writes ``stop.json`` and wakes it),
  ``poll`` only reads files (from any process), and a job outlives a restart of the worker
  that submitted it: ``recover`` then reports it as running.
* Peers (seed 002): a replica that runs no command listens on its address at PEER_PORT, as
  a container's sshd would, and the entry replicas start once a TCP connection to every peer
  succeeds. The supervisor probes, sharing the machine's loopback with the entry replica, so
  this proves what mpirun needs on a cluster (each peer's address reaches that peer) rather
  than only that a process was forked.
* Orphans: were a supervisor to die, ``poll``, ``stop`` and ``recover`` find the processes
  it left by the marker variable each of them carries (and the recorded pid with its start
  time), kill them and end the workload as failed.
* Not done: CPU and memory limits (no cgroups here; ``usage`` reports what is used), and
  rewriting inside the job's own code: a script that opens ``/workspace/...`` literally or
  resolves a peer's name through DNS does not find it; relative paths (the working folder
  is the workspace) and the values it is given in argv and environment work.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from functools import cached_property
from pathlib import Path

from resources.backends.base import (
    DEFAULT_PATH,
    BackendError,
    RecoveredWorkload,
    UnknownWorkload,
    UsageSample,
    Workload,
    WorkloadStatus,
)
from resources.backends.local import host, isolation, states, users
from resources.backends.local import logs as output
from resources.backends.local import shell as shells
from resources.backends.local.layout import FOLDER_NAME, SHELL_SAFE_PATH
from resources.backends.local.prepare import (
    REPLICA_NAME,
    check_workload,
    lay_out,
    pending_state,
    prepare_sources,
)
from resources.backends.local.usage import sample_usage

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[3]
SUBMIT_TIMEOUT = 120  # a workload still without a supervisor after this was never started
# A laid-out workload whose supervisor was not started this long after: its submitter died
# (a supervisor's starter writes supervisor.json within a second of being asked).
ABANDONED_SECONDS = 20.0
ORPHAN_GRACE = 1.0  # seconds orphans get between SIGTERM and SIGKILL (nobody to wait longer)
LOST = "its supervisor ended unexpectedly (killed, or the machine ran out of memory)"


class LocalRunner:
    def __init__(
        self,
        root: Path | str,
        *,
        registry: Path = host.ADDRESS_REGISTRY,
        hidden: tuple[Path | str, ...] = (),
        cache: Path | str | None = None,
    ):
        self.root = Path(root).resolve()
        # The nodes' fast local storage: prepared data (SPEC J19, local_prepared).
        self.cache = Path(cache).resolve() if cache else self.root.parent / "node-cache"
        # What an isolated job must not see: the runs folder itself, and what the backend
        # adds (the storage root); see local_runner_isolation.
        self.hidden = tuple(dict.fromkeys(str(Path(p).resolve()) for p in (self.root, *hidden)))
        if not SHELL_SAFE_PATH.fullmatch(str(self.root)):
            # Rewritten paths end up inside commands such as bash -c "cd /workspace && ...".
            raise ValueError(f"the runs folder must be a plain path (no spaces): {self.root}")
        self.registry = registry

    @cached_property
    def user(self) -> users.JobUser | None:
        """Who jobs without an identity of their own run as (looked up, or created, once)."""
        return users.job_user()

    def user_of(self, workload: Workload) -> users.JobUser | None:
        """Who ``workload``'s processes are: its owner's identity (as root), else the
        runner's default. A console not running as root cannot switch users at all."""
        if workload.run_as is None or os.geteuid() != 0:
            return self.user
        run_as = workload.run_as
        try:
            return users.identity_user(
                run_as.uid, run_as.gid, tuple(run_as.groups), run_as.name or f"job-{run_as.uid}"
            )
        except OSError as error:
            raise BackendError(f"cannot run as {run_as.name or run_as.uid}: {error}") from None

    def isolates(self, workload: Workload) -> bool:
        """Jobs with an identity of their own get a mount namespace of their own."""
        return workload.run_as is not None and isolation.supported()

    # --- submit ------------------------------------------------------------------------------

    def submit(self, workload: Workload) -> None:
        check_workload(workload)
        record = json.loads(json.dumps(dataclasses.asdict(workload)))
        folder = self.root / workload.workdir_name
        host.make_dirs(self.root)
        if (folder / "workload.json").exists():
            self._same(folder, record)
            self._start_abandoned(folder)
            return
        user = self.user_of(workload)
        isolated = self.isolates(workload)
        blocked = users.unreachable_ancestor(folder, user)
        if blocked is not None:
            # Said on the job's page: the user knows no folder of this machine.
            log.warning("the job user cannot enter %s: it needs o+x", blocked)
            raise BackendError("the job's user cannot enter the runs folder (ask an admin)")
        prepare_sources(workload, user, isolated=isolated)
        staging = self.root / f".staging-{workload.workdir_name}-{uuid.uuid4().hex[:8]}"
        block = host.reserve_block(str(folder), self.registry)
        try:
            host.make_dirs(staging)
            launch = lay_out(
                workload, folder=folder, staging=staging, block=block, user=user,
                hidden=self.hidden if isolated else None, cache=self.cache,
            )  # fmt: skip
            host.write_json(staging / "workload.json", record, 0o600)
            host.write_json(staging / "launch.json", launch, 0o600)
            host.write_json(staging / "state.json", pending_state(workload))
            try:
                os.rename(staging, folder)
            except OSError:  # a duplicate delivery got there first (or a stranger's folder)
                shutil.rmtree(staging)
                host.release_block(block, str(folder), self.registry)
                return self._same(folder, record)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            host.release_block(block, str(folder), self.registry)
            raise
        if workload.id != workload.workdir_name:
            (self.root / workload.id).symlink_to(workload.workdir_name)
        self._start_supervisor(folder)

    def _same(self, folder: Path, record: dict) -> None:
        """Submitting the same workload twice is a no-op (Celery may deliver twice)."""
        if host.read_json(folder / "workload.json") != record:
            raise ValueError(f"another workload already lives in {folder}")

    def _start_abandoned(self, folder: Path) -> bool:
        """Start the supervisor of a workload whose submitter died between laying it out and
        starting it (a worker killed mid-submit); True if it did."""
        if (folder / "supervisor.json").exists():
            return False
        started = folder / ".started"
        mark = started if started.exists() else folder / "workload.json"
        if time.time() - mark.stat().st_mtime < ABANDONED_SECONDS:
            return False
        self._start_supervisor(folder, again=True)
        return True

    def _start_supervisor(self, folder: Path, *, again: bool = False) -> None:
        # Once per workload, whoever asks: two supervisors would run every replica twice.
        with host.locked(folder / ".lock"):
            started = folder / ".started"
            if started.exists() and not (again and not (folder / "supervisor.json").exists()):
                return
            started.touch()
        env = {
            "PATH": os.environ.get("PATH") or DEFAULT_PATH,
            "PYTHONPATH": str(PROJECT_ROOT),
            "LANG": "C.UTF-8",
            host.MARKER: str(folder),
        }
        with open(folder / "supervisor.log", "ab") as log:
            starter = subprocess.Popen(
                [sys.executable, "-m", "resources.backends.local.supervisor", str(folder)],
                cwd=folder,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        # It forks the supervisor and exits at once (see local_runner_supervisor.main).
        if starter.wait(timeout=60) != 0 or host.read_json(folder / "supervisor.json") is None:
            self._finish(folder, "failed", "the local supervisor did not start")
            tail = (folder / "supervisor.log").read_text(errors="replace")[-2000:]
            raise BackendError(f"the local supervisor did not start: {tail}")

    # --- stop, poll ------------------------------------------------------------------------

    def stop(self, workload_id: str, graceful_seconds: int) -> None:
        folder = self._folder(workload_id, missing_ok=True)
        if folder is None or states.finished(host.read_json(folder / "state.json")):
            return
        now = time.time()
        earlier = host.read_json(folder / "stop.json")
        # A second request may bring the SIGKILL closer, never push it back.
        if earlier is None or now + graceful_seconds < (
            earlier["requested_at"] + earlier["graceful_seconds"]
        ):
            request = {"graceful_seconds": graceful_seconds, "requested_at": now}
            host.write_json(folder / "stop.json", request)
        supervisor = host.read_json(folder / "supervisor.json")
        if host.is_alive(supervisor):
            with contextlib.suppress(ProcessLookupError):
                os.kill(supervisor["pid"], signal.SIGUSR1)  # wake it now
        elif supervisor is not None:
            states.end_orphaned(folder, min(ORPHAN_GRACE, graceful_seconds), LOST)
        # No supervisor.json yet: a submit is still under way; its supervisor will read the
        # request before it starts anything long-lived.

    def signal_node(self, node: str, signum: int) -> list[str]:
        """Send ``signum`` to the process groups of every running replica on ``node`` (a
        fault injected there: a killed or frozen process); returns the workloads hit."""
        hit = []
        for workload_id in self.supervised():
            folder = self.root / workload_id
            record = host.read_json(folder / "workload.json") or {"replicas": []}
            state = host.read_json(folder / "state.json")
            there = {r["name"] for r in record["replicas"] if r.get("node") == node}
            if not there or states.finished(state):
                continue
            for replica in state.get("replicas", []):
                process = replica.get("process")
                if replica["name"] in there and host.is_alive(process):
                    host.signal_group(process["pid"], signum)
                    hit.append(record["id"])
        return sorted(set(hit))

    def poll(self, workload_id: str) -> WorkloadStatus:
        folder = self._folder(workload_id)
        return states.status(self._checked_state(folder)[0])

    def _checked_state(self, folder: Path) -> tuple[dict, int]:
        """The state on disk, after ending the workload if nobody supervises it any more."""
        state = host.read_json(folder / "state.json")
        if states.finished(state):
            return state, 0
        supervisor = host.read_json(folder / "supervisor.json")
        if host.is_alive(supervisor):
            return state, 0
        if supervisor is None:
            if time.time() - folder.stat().st_mtime < SUBMIT_TIMEOUT:
                with contextlib.suppress(BackendError, OSError):
                    self._start_abandoned(folder)
                return state, 0  # still being submitted
            return states.end_orphaned(folder, ORPHAN_GRACE, "it was never started")
        state = host.read_json(folder / "state.json")  # it may have just finished
        if states.finished(state):
            return state, 0
        return states.end_orphaned(folder, ORPHAN_GRACE, LOST)

    # --- logs, usage ---------------------------------------------------------------------------

    def logs(
        self, workload_id: str, replica: str, offset: int = 0, limit: int = 65536
    ) -> tuple[str, int]:
        folder = self._replica_folder(workload_id, replica)
        if offset < 0 or limit <= 0:
            raise ValueError(f"bad log window: offset {offset}, limit {limit}")
        return output.read_log(folder, replica, offset, limit)

    def log_size(self, workload_id: str, replica: str) -> int:
        folder = self._replica_folder(workload_id, replica)
        try:
            return (folder / replica / "log.txt").stat().st_size
        except FileNotFoundError:
            return 0

    def path_names(self, workload_id: str, replica: str) -> dict[str, str]:
        return output.path_names(self._replica_folder(workload_id, replica), replica)

    def usage(self, workload_id: str) -> list[UsageSample]:
        folder = self._folder(workload_id)
        state = host.read_json(folder / "state.json") or {}
        return sample_usage(folder, state.get("replicas", []))

    # --- cleanup, recover ----------------------------------------------------------------------

    def cleanup(self, workload_id: str) -> None:
        folder = self._folder(workload_id, missing_ok=True)
        if folder is None:
            return
        supervisor = host.read_json(folder / "supervisor.json")
        if host.is_alive(supervisor):
            # First, so that it starts nothing new while its replicas are being killed.
            host.kill_processes([states.process(supervisor["pid"])], 0)
        state = host.read_json(folder / "state.json")
        host.kill_processes(states.processes_of(folder, state), 0)
        launch = host.read_json(folder / "launch.json") or {}
        if launch.get("block"):
            host.release_block(tuple(launch["block"]), str(folder), self.registry)
        alias = self.root / workload_id
        if alias.is_symlink():
            alias.unlink()
        shutil.rmtree(folder, ignore_errors=True)

    # --- the debug terminal (see local_runner_shell) --------------------------------------------

    def open_shell(self, workload_id: str, replica: str, rows: int = 24, cols: int = 80):
        folder = self._replica_folder(workload_id, replica)
        return shells.open_shell(folder, replica, rows, cols, output.path_names(folder, replica))

    def discard_kept(self, workload_id: str) -> bool:
        folder = self._folder(workload_id, missing_ok=True)
        return folder is not None and shells.discard_kept(folder)

    def supervised(self) -> list[str]:
        """Ids of the workloads whose supervisor runs now (their processes are looked after)."""
        if not self.root.is_dir():
            return []
        found = []
        for folder in sorted(self.root.iterdir()):
            record = host.read_json(folder / "workload.json") if folder.is_dir() else None
            if record is not None and host.is_alive(host.read_json(folder / "supervisor.json")):
                found.append(record["id"])
        return found

    def recover(self) -> list[RecoveredWorkload]:
        if not self.root.is_dir():
            return []
        marked = host.marked_processes()  # one pass over the process table for all of them
        found = []
        for entry in sorted(self.root.iterdir()):
            if entry.name.startswith(".staging-"):
                if time.time() - entry.stat().st_mtime > SUBMIT_TIMEOUT:
                    shutil.rmtree(entry, ignore_errors=True)  # its submitter died half-way
                continue
            record = host.read_json(entry / "workload.json") if not entry.is_symlink() else None
            if record is None:
                continue
            state, killed = self._checked_state(entry)
            if states.finished(state) and not killed:
                # Nothing of a finished workload may run but its supervisor, on its way out.
                supervisor = host.read_json(entry / "supervisor.json") or {}
                leftovers = [
                    process
                    for process in marked.get(str(entry), [])
                    if not (process.pid == supervisor.get("pid") and host.is_alive(supervisor))
                ]
                killed = host.kill_processes(leftovers, 0)
            found.append(RecoveredWorkload(record["id"], states.status(state), killed))
        return found

    def _folder(self, workload_id: str, *, missing_ok: bool = False) -> Path | None:
        path = self.root / workload_id
        if FOLDER_NAME.fullmatch(workload_id) and (path / "workload.json").is_file():
            return path.resolve()
        if missing_ok:
            return None
        raise UnknownWorkload(f"no local workload {workload_id!r}")

    def _replica_folder(self, workload_id: str, replica: str) -> Path:
        """The workload's folder, which holds a folder for ``replica``."""
        folder = self._folder(workload_id)
        if not REPLICA_NAME.fullmatch(replica) or not (folder / replica).is_dir():
            raise UnknownWorkload(f"workload {workload_id} has no replica {replica!r}")
        return folder


def still_running() -> list[str]:
    """Ids of the workloads this machine's supervisors look after now (settings.STILL_RUNNING:
    what `make run` says keeps running after it stops)."""
    from django.conf import settings

    return LocalRunner(settings.RUNS_DIR).supervised()
