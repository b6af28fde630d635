"""The contract between the console and a cluster: plain data, no ORM.

A backend reports its nodes (``inventory``) and runs workloads: a :class:`Workload` is one
attempt of a job, its :class:`ReplicaSpec` s are what the launch plan says each replica runs.
Both the local backend and the Kubernetes backend implement :class:`Backend`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from resources.backends import terminal

# What runs around a job's own command, kept apart; part of this contract.
from resources.backends.steps import Checked, LifecycleScripts, NodeChecks, Note, PreparedData

__all__ = ["Checked", "LifecycleScripts", "NodeChecks", "Note", "PreparedData"]


@dataclass(frozen=True)
class NodeInfo:
    """One node as the backend sees it: hardware facts, and the problems (``conditions``:
    type, "reason: message") and console-made cordon a cluster reports. What the console
    decides about a node (its pool, cordon, retirement) is not here: sync never overwrites
    those."""

    name: str
    cpu_millicores: int
    memory_mib: int
    ready: bool = True
    os_image: str = ""
    kernel: str = ""
    accelerator_model: str = ""  # e.g. "A100"; empty for CPU-only nodes
    accelerator_kind: str = "CPU"  # GPU, MLU, NPU or CPU
    accelerator_memory_gib: int = 0
    board_count: int = 0
    slices_per_board: int = 1
    driver_version: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    console_cordon: bool = False  # an isolation of the console's, mirrored (SPEC F3)
    conditions: tuple[tuple[str, str], ...] = ()


# The PATH a workload's processes start from when its image adds nothing of its own.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class BackendError(Exception):
    """The backend could not answer (unreachable API, bad credentials...)."""


class BackendUnavailable(BackendError):
    """The backend did not answer usefully just now (down, slow, overloaded): asking again
    later may work, unlike a refusal."""


# --- workloads: what a backend runs ------------------------------------------------------
#
# A launch plan (jobs.launch) becomes a Workload on the jobs side: this module must not import
# jobs, so the contract repeats the plan's shape as plain data (mounts as tuples).


class ReplicaState(StrEnum):
    PENDING = "pending"  # not started yet (e.g. an entry replica waiting for its peers)
    STARTING = "starting"  # started, not yet reachable by its peers
    RUNNING = "running"
    SUCCEEDED = "succeeded"  # exited 0 on its own
    FAILED = "failed"  # exited non-zero, died of a signal we did not send, or never started
    STOPPED = "stopped"  # ended because we stopped it (on request, or when the workload ended)

    @property
    def finished(self) -> bool:
        return self in _FINISHED


class WorkloadState(StrEnum):
    PENDING = "pending"  # accepted, nothing started yet
    STARTING = "starting"  # some replicas started (peers being waited for)
    RUNNING = "running"  # every replica started
    SUCCEEDED = "succeeded"  # every awaited replica exited 0
    FAILED = "failed"  # a replica failed, or the peers never became reachable
    STOPPED = "stopped"  # stopped on request (stop/expiry/preemption, SPEC F7)

    @property
    def finished(self) -> bool:
        return self in _FINISHED


_FINISHED = frozenset({"succeeded", "failed", "stopped"})

MountSpec = tuple[str, str, bool]  # (source on the node, target in the container, read_only)


@dataclass(frozen=True, kw_only=True)
class ReplicaSpec:
    """One replica (container / process group) of a workload, as the launch plan says.

    ``name`` is the plan's hostname: peers use it (hostfiles, TF_CONFIG, MASTER_ADDR), and it
    names the replica in logs and statuses. ``aliases`` are other names peers use for it (the
    plan's address when it is ``hostname.subdomain``). ``slots`` are the board slots it holds
    on ``node`` (physical indexes, for CUDA_VISIBLE_DEVICES). ``runs_entry`` False: no command
    of its own (``argv`` empty), it stays up as a peer until the workload ends; ``awaited``:
    the workload succeeds when every awaited replica exits 0.
    """

    name: str
    role: str
    index: int
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # absolute in-container path -> text
    mounts: tuple[MountSpec, ...] = ()
    cpu_millicores: int = 1000
    memory_mib: int = 1024
    slots: tuple[int, ...] = ()
    node: str = ""
    runs_entry: bool = True
    awaited: bool = True
    aliases: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """How people name it: "worker 1", "ps 0"."""
        return f"{self.role} {self.index}"


@dataclass(frozen=True)
class RunAs:
    """Who a workload's processes are: the job owner's own identity, the same on every
    backend (locally a user of this machine; on Kubernetes ``runAsUser``, ``runAsGroup``,
    ``fsGroup`` and ``supplementalGroups``). ``groups``: the groups of the owner's projects.
    """

    uid: int
    gid: int
    groups: tuple[int, ...] = ()
    name: str = ""


@dataclass(frozen=True, kw_only=True)
class Workload:
    """Everything one attempt of a job runs. ``id`` is unique per attempt ("job-42-1").

    ``wait_for_peers``: the entry replicas start only once every peer is reachable (seed 002),
    and the workload fails if that takes more than ``peer_timeout_seconds``.
    ``graceful_seconds``: between SIGTERM and SIGKILL when the workload ends on its own (a
    replica failed, or the awaited ones succeeded and the peers are stopped); a stop request
    brings its own. ``workdir_name``: the folder the backend keeps its files in (default: id).
    ``run_as``: whose processes they are (None: the backend's own unprivileged default).
    The last four fields are for clusters; the local backend runs the runtime on ``PATH``
    and admits gangs itself. ``prepare_data``: datasets copied to each node first (J19);
    ``scripts``: the lifecycle scripts (J23).
    """

    id: str
    replicas: tuple[ReplicaSpec, ...]
    run_as: RunAs | None = None
    image: str = ""  # the container image (a cluster runs it; the local backend does not)
    labels: dict[str, str] = field(default_factory=dict)  # e.g. the job, attempt and owner
    min_available: int = 0  # the gang: replicas that must start together (0: all of them)
    priority_class: str = ""  # a cluster's PriorityClass for the job's priority
    queue: str = ""  # a cluster's Volcano queue for the job's project ("": the cluster's own)
    graceful_seconds: int = 30
    wait_for_peers: bool = False
    peer_timeout_seconds: int = 60
    workdir_name: str = ""
    prepare_data: tuple[PreparedData, ...] = ()
    scripts: LifecycleScripts = field(default_factory=LifecycleScripts)
    # The checks a cluster runs in each pod before the job's code (SPEC F1), by node; empty:
    # none there (the local backend's are run by the console before it starts anything).
    prechecks: tuple[NodeChecks, ...] = ()

    def __post_init__(self) -> None:
        if not self.workdir_name:
            object.__setattr__(self, "workdir_name", self.id)
        object.__setattr__(self, "replicas", tuple(self.replicas))
        object.__setattr__(self, "prepare_data", tuple(self.prepare_data))

    def replica(self, name: str) -> ReplicaSpec:
        for replica in self.replicas:
            if replica.name == name:
                return replica
        raise KeyError(name)


@dataclass(frozen=True)
class ReplicaStatus:
    name: str
    state: ReplicaState
    exit_code: int | None = None  # 128 + N when killed by signal N, as shells and kubelets say
    reason: str = ""  # plain English: "exited with code 3", "command not found: pyhton"


@dataclass(frozen=True)
class WorkloadStatus:
    state: WorkloadState
    replicas: tuple[ReplicaStatus, ...] = ()
    reason: str = ""  # plain English: "worker 1 exited with code 3"
    # The cluster lost a node it ran on, or a pod of it was force-deleted (seed 003).
    node_lost: bool = False
    notes: tuple[Note, ...] = ()  # data preparation and lifecycle scripts, as they went
    # The prechecks run beside the code (Workload.prechecks), of each replica that ran them.
    prechecks: tuple[Checked, ...] = ()


@dataclass(frozen=True)
class UsageSample:
    """One replica's use now. ``cpu_percent``: 100 = one core busy (as top counts)."""

    replica: str
    cpu_percent: float
    memory_mib: float
    accelerator_util: float | None = None  # percent, averaged over the replica's boards
    accelerator_memory_mib: float | None = None


@dataclass(frozen=True)
class RecoveredWorkload:
    """What :meth:`Backend.recover` found of one workload left from before."""

    workload_id: str
    status: WorkloadStatus
    killed_processes: int = 0  # orphans it had to kill (their supervisor was gone)


@dataclass(frozen=True)
class Shell:
    """An interactive shell in one replica (the debug terminal, SPEC J20): a process of the
    caller's and the master side of its terminal. The caller reads and writes ``fd``, ends
    the shell by closing it and killing the process group ``pid`` leads, and reaps ``pid``.
    ``folders``: host folder -> the job's path for it, for what the shell prints (empty
    where the shell already sees the job's own paths, as in a container)."""

    pid: int
    fd: int
    folders: dict[str, str] = field(default_factory=dict)

    def resize(self, rows: int, cols: int) -> None:
        """The terminal's size, as the browser's window now has it."""
        terminal.set_size(self.fd, rows, cols)

    def end(self) -> None:
        """Hang the terminal up and end the shell's whole session (blocks up to seconds)."""
        terminal.end_on_terminal(self.pid, self.fd)


class ShellUnavailable(BackendError):
    """The backend cannot open a shell in that replica (not supported, or nothing left to
    enter); the message says why in plain words."""


class UnknownWorkload(BackendError, KeyError):
    """No workload with that id (never submitted, or cleaned up)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


PATH_BEFORE = r"(?<![\w.\-/~])"  # not inside another path or word
PATH_AFTER = r"(?![\w.\-])"  # "/workspace/x" matches "/workspace", "/workspaces" does not


def job_paths(text: str, folders: Mapping[str, str]) -> str:
    """``text`` with each host folder of ``folders`` (and what lies under it) named by the
    job's own path for it (``Shell.folders``, ``Backend.path_names``): what the local
    backend's layout did to the paths, undone for what a job prints. A folder mapped to
    ``/`` is a replica's, which plays the container's ``/``."""
    if not folders:
        return text
    alternatives = [
        PATH_BEFORE + re.escape(folder) + PATH_AFTER
        for folder in sorted(folders, key=len, reverse=True)
    ]

    def named(match: re.Match) -> str:
        path = folders[match.group(0)]
        # "<replica>/workspace" is "/workspace", not "//workspace".
        return "" if path == "/" and match.string.startswith("/", match.end()) else path

    return re.compile("|".join(alternatives)).sub(named, text)


class Backend(Protocol):
    """A cluster. Every method is quick: none waits for a workload to end (a Celery worker
    calls them). Workload methods raise :class:`UnknownWorkload` for an id they do not know,
    except ``stop`` and ``cleanup``, which are then no-ops (so that retries are harmless)."""

    name: str
    # Whether the backend runs a workload's prechecks (Workload.prechecks) beside its code
    # and reports them (WorkloadStatus.prechecks), rather than the console before the start.
    prechecks_in_workload: bool

    def inventory(self) -> list[NodeInfo]:
        """Every node the backend can run workloads on, as it is now."""
        ...

    def health(self) -> str:
        """Empty when the backend answers; otherwise what is wrong, in plain words."""
        ...

    def submit(self, workload: Workload) -> None:
        """Start every replica (gang: all or none). Submitting the same workload again is a
        no-op; another workload under a known id is a ValueError."""
        ...

    def stop(self, workload_id: str, graceful_seconds: int) -> None:
        """SIGTERM every replica, SIGKILL what is left after ``graceful_seconds`` (SPEC F7).
        Returns at once; ``poll`` shows ``stopped`` once everything has ended."""
        ...

    def poll(self, workload_id: str) -> WorkloadStatus:
        """The workload's state now."""
        ...

    def logs(
        self, workload_id: str, replica: str, offset: int = 0, limit: int = 65536
    ) -> tuple[str, int]:
        """Up to ``limit`` bytes of a replica's output from byte ``offset``, and the offset to
        ask for next (``offset`` when there is nothing new)."""
        ...

    def log_size(self, workload_id: str, replica: str) -> int:
        """How many bytes of output the replica has written so far (to show a log's tail)."""
        ...

    def path_names(self, workload_id: str, replica: str) -> dict[str, str]:
        """Host folder -> the job's path for it, for what ``replica``'s processes print (a
        tool's terminal, say): a user never sees the machine's folders. Empty where they
        see the job's own paths already, as in a container."""
        return {}

    def host_path(self, workload_id: str, replica: str, path: str) -> Path | None:
        """Where ``replica``'s in-container ``path`` lives on this machine (a tool's socket
        the proxy reaches), or None where the replica's files are not on this machine."""
        return None

    def usage(self, workload_id: str) -> list[UsageSample]:
        """CPU, memory and accelerator use of each running replica."""
        ...

    def cleanup(self, workload_id: str) -> None:
        """Kill whatever is left and forget the workload (its files and logs too)."""
        ...

    def open_shell(self, workload_id: str, replica: str, rows: int, cols: int) -> Shell:
        """An interactive shell in ``replica`` of the workload, as its processes are: same
        identity, environment, working folder and view of the file system. Raises
        :class:`ShellUnavailable` when it cannot; quick (never waits for the shell)."""
        ...

    def discard_kept(self, workload_id: str) -> bool:
        """An ended workload kept for debugging is no longer needed: free what only its
        containers needed (their workspace, home and tmp), keep its logs and status.
        True if there was anything to free (a second call is a no-op)."""
        ...

    def recover(self) -> list[RecoveredWorkload]:
        """Called when a worker process (re)starts: every workload left from before, with its
        status; orphans (processes nobody supervises any more) are killed."""
        ...
