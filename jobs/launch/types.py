"""The constants of a launch and what comes out of it: a :class:`LaunchPlan` of
:class:`ReplicaPlan`, plain frozen data a backend executes as it is."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from jobs.launch.commands import display_command
from resources.backends.base import ReplicaSpec

# Our own variables carry this prefix; seed 002's names are repeated under the peer's prefix
# so that scripts written for that platform run unchanged.
ENV_PREFIX = "CONSOLE_"
PEER_ENV_PREFIX = "MLP_"

# Seed 001: framework ports are picked from 5000-10000 (see port_for).
PORT_RANGE = (5000, 10000)

# Where the job's output path appears inside every container (SPEC W; the same constant as
# resources.catalog.mounts.OUTPUTS_TARGET, repeated because this package must not read settings).
OUTPUTS_DIR = "/workspace/outputs"

# SPEC J15 / seed 000: the parameter-server spec is an admin setting, 1 CPU and 1 GiB.
DEFAULT_PS_CPU_MILLICORES = 1000
DEFAULT_PS_MEMORY_MIB = 1024


def port_for(job_id: int) -> int:
    """The job's framework port: deterministic, so a restarted job keeps it, and spread over
    the range so that jobs sharing one machine (the local backend) rarely collide."""
    if job_id < 0:
        raise ValueError(f"job id must not be negative: {job_id}")
    low, high = PORT_RANGE
    return low + job_id % (high - low + 1)


def slots_for(boards: float) -> int:
    """Processes per node: one per board, a slice counting as a board; 1 for CPU-only specs."""
    return max(1, math.ceil(boards)) if boards > 0 else 1


class MountLike(Protocol):
    """Anything with these three attributes, e.g. ``resources.catalog.mounts.Mount``."""

    @property
    def source(self) -> str: ...

    @property
    def target(self) -> str: ...

    @property
    def read_only(self) -> bool: ...


@dataclass(frozen=True, kw_only=True)
class ReplicaPlan:
    """One container/process group of the job: exactly what a backend starts.

    ``runs_entry`` False: the replica runs no command of its own (``argv`` empty) and stays
    up as a peer (sshd for mpirun/deepspeed) until the awaited replicas end.
    ``awaited``: the job succeeds when every awaited replica exits 0; any replica failing
    fails it; the others (MPI peers, parameter servers) are then stopped (SPEC F7).
    """

    role: str  # "worker" or "ps"
    index: int  # within the role
    hostname: str  # the container's own hostname, a DNS label
    address: str  # how peers reach it: hostname, or hostname.subdomain
    argv: tuple[str, ...]
    runs_entry: bool
    awaited: bool
    env: dict[str, str]
    files: dict[str, str]  # absolute path in the container -> text content
    mounts: tuple[MountLike, ...]
    cpu_millicores: int
    memory_mib: int
    boards: float

    @property
    def label(self) -> str:
        return f"{self.role} {self.index}"

    def display_command(self, width: int | None = None) -> str:
        """The command as one shell line; with ``width``, wrapped with `` \\`` continuations
        (still pasteable into a shell)."""
        return display_command(self.argv, width)

    def placed(self, node: str, slots: tuple[int, ...] = (), *, path: str = "") -> ReplicaSpec:
        """This replica as a backend runs it (the Workload contract's replica), on ``node``
        holding the physical boards ``slots``; ``path``: the PATH its processes start from
        (empty: the backend's default). The one place a plan becomes the backend's type."""
        return ReplicaSpec(
            name=self.hostname,
            role=self.role,
            index=self.index,
            argv=tuple(self.argv),
            env={**self.env, "PATH": path} if path else dict(self.env),
            files=dict(self.files),
            mounts=tuple((str(m.source), str(m.target), bool(m.read_only)) for m in self.mounts),
            cpu_millicores=self.cpu_millicores,
            memory_mib=self.memory_mib,
            slots=slots,
            node=node,
            runs_entry=self.runs_entry,
            awaited=self.awaited,
            aliases=(self.address,) if self.address != self.hostname else (),
        )


@dataclass(frozen=True, kw_only=True)
class LaunchPlan:
    mode: str
    job_name: str
    replicas: tuple[ReplicaPlan, ...]

    @property
    def wait_for_peers(self) -> bool:
        """Seed 002: when one replica launches onto the others (mpirun, deepspeed), every
        replica must be reachable before it starts."""
        return any(not replica.runs_entry for replica in self.replicas)

    def replica(self, role: str, index: int) -> ReplicaPlan:
        for replica in self.replicas:
            if replica.role == role and replica.index == index:
                return replica
        raise KeyError(f"{role} {index}")

    def summary(self, width: int = 100) -> str:
        """A few lines for the detail page: one block per replica."""
        workers = [r for r in self.replicas if r.role == "worker"]
        lines = [f"{self.mode}: {_count(len(workers), 'worker')}, "
                 f"{_count(len(self.replicas), 'replica')}"]  # fmt: skip
        for replica in self.replicas:
            boards = f", {_count(replica.boards, 'board')}" if replica.boards else ""
            lines.append(
                f"{replica.label} ({replica.address}): {replica.cpu_millicores}m CPU, "
                f"{replica.memory_mib} MiB{boards}"
            )
            if replica.runs_entry:
                command = replica.display_command(width - 4).replace("\n", "\n    ")
                lines.append(f"    {command}")
            else:
                lines.append("    (peer: runs no command, stays up until the job ends)")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        """JSON-ready, e.g. to keep the effective launch of an attempt."""
        return {
            "mode": self.mode,
            "job_name": self.job_name,
            "replicas": [
                {
                    "role": r.role,
                    "index": r.index,
                    "hostname": r.hostname,
                    "address": r.address,
                    "argv": list(r.argv),
                    "runs_entry": r.runs_entry,
                    "awaited": r.awaited,
                    "env": dict(r.env),
                    "files": dict(r.files),
                    "mounts": [
                        {
                            "source": str(m.source),
                            "target": str(m.target),
                            "read_only": bool(m.read_only),
                        }
                        for m in r.mounts
                    ],
                    "cpu_millicores": r.cpu_millicores,
                    "memory_mib": r.memory_mib,
                    "boards": r.boards,
                }
                for r in self.replicas
            ],
        }


def _count(number: float, noun: str) -> str:
    """ "1 worker", "2 workers", "0.5 boards": the plan summary is English, for operators."""
    return f"{number:g} {noun}" if number == 1 else f"{number:g} {noun}s"
