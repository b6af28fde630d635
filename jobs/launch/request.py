"""What a launch needs to know about a job and its placement, checked once here so the
per-mode modules can trust it."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from console.modes import MODES, may_have_parameter_servers, only_node_count
from jobs.launch.types import (
    DEFAULT_PS_CPU_MILLICORES,
    DEFAULT_PS_MEMORY_MIB,
    MountLike,
    slots_for,
)

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# One folder name: what resources.catalog.mounts.outputs_subfolder produces.
FOLDER_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,62}")


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


@dataclass(frozen=True, kw_only=True)
class LaunchRequest:
    """One job (or one batch sub-task) placed on ``node_count`` nodes of one spec.

    ``slots`` 0 means "derive from ``boards``" (:func:`slots_for`); after construction it is
    always at least 1. ``boards`` is per node and may be a slice (0.5).
    """

    job_name: str
    mode: str
    command: str
    cpu_millicores: int
    memory_mib: int
    port: int
    node_count: int = 1
    boards: float = 0
    slots: int = 0
    ps_count: int = 0
    ps_cpu_millicores: int = DEFAULT_PS_CPU_MILLICORES
    ps_memory_mib: int = DEFAULT_PS_MEMORY_MIB
    mounts: Sequence[MountLike] = ()
    extra_env: Mapping[str, str] = field(default_factory=dict)
    output_subdir: str | None = None
    # Kubernetes: the headless Service the replicas' hostnames live under, so that peers use
    # "<job>-worker-1.<subdomain>"; empty where the bare hostname resolves (local backend).
    subdomain: str = ""

    def __post_init__(self) -> None:
        self._check_job()
        self._check_resources()
        self._check_names()
        mounts = tuple(self.mounts)
        for mount in mounts:
            _require(
                all(hasattr(mount, a) for a in ("source", "target", "read_only")),
                f"not a mount (needs source, target, read_only): {mount!r}",
            )
            _require(str(mount.target).startswith("/"), f"mount target is not absolute: {mount!r}")
        # Copies, so that the caller's later edits cannot change a request or its plans.
        object.__setattr__(self, "mounts", mounts)
        object.__setattr__(self, "extra_env", dict(self.extra_env))
        object.__setattr__(self, "boards", float(self.boards))
        if self.slots == 0:
            object.__setattr__(self, "slots", slots_for(self.boards))

    def _check_job(self) -> None:
        """The job's name, mode, command and node count."""
        _require(
            DNS_LABEL.fullmatch(self.job_name or "") is not None,
            f"job name is not a DNS label: {self.job_name!r}",
        )
        _require(self.mode in MODES, f"unknown distributed mode: {self.mode!r}")
        _require(bool(self.command and self.command.strip()), "the run command is empty")
        _require(self.node_count >= 1, f"node count must be at least 1: {self.node_count}")
        _require(
            only_node_count(self.mode) in (None, self.node_count),
            f"single-node mode runs on exactly one node, not {self.node_count}",
        )

    def _check_resources(self) -> None:
        """What each node and each parameter server gets."""
        _require(
            math.isfinite(self.boards) and self.boards >= 0,
            f"boards must be a non-negative number: {self.boards}",
        )
        _require(self.slots >= 0, f"slots must not be negative: {self.slots}")
        _require(
            self.cpu_millicores > 0 and self.memory_mib > 0, "a node needs some CPU and memory"
        )
        _require(
            self.ps_count >= 0, f"parameter-server count must not be negative: {self.ps_count}"
        )
        _require(
            self.ps_count == 0 or may_have_parameter_servers(self.mode),
            "parameter servers exist in TensorFlow mode only",
        )
        _require(
            self.ps_cpu_millicores > 0 and self.ps_memory_mib > 0,
            "a parameter server needs some CPU and memory",
        )

    def _check_names(self) -> None:
        """The port, the output sub-folder, the subdomain and the environment's names."""
        # Any TCP port is accepted (the seed's PyTorch example uses 2222); port_for keeps
        # real jobs inside PORT_RANGE.
        _require(1 <= self.port <= 65535, f"not a TCP port: {self.port}")
        _require(
            self.output_subdir is None or FOLDER_NAME.fullmatch(self.output_subdir) is not None,
            f"output sub-folder must be one folder name: {self.output_subdir!r}",
        )
        _require(
            self.subdomain == "" or DNS_LABEL.fullmatch(self.subdomain) is not None,
            f"subdomain is not a DNS label: {self.subdomain!r}",
        )
        for name, value in self.extra_env.items():
            _require(
                isinstance(name, str) and ENV_NAME.fullmatch(name) is not None,
                f"not an environment variable name: {name!r}",
            )
            _require(isinstance(value, str), f"environment value of {name} is not a string")

    @property
    def process_count(self) -> int:
        """Training processes across the job's workers (MPI's -np)."""
        return self.node_count * self.slots
