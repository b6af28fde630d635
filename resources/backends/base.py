"""The contract between the console and a cluster: plain data, no ORM.

A backend reports its nodes (``inventory``) and, from the execution work on, runs workloads.
Both the local backend and the Kubernetes backend implement :class:`Backend`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class NodeInfo:
    """One node as the backend sees it: hardware facts only.

    What the console decides about a node (its pool, cordon, retirement) is not here: sync
    never overwrites those.
    """

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


class BackendError(Exception):
    """The backend could not answer (unreachable API, bad credentials...)."""


class Backend(Protocol):
    name: str

    def inventory(self) -> list[NodeInfo]:
        """Every node the backend can run workloads on, as it is now."""
        ...

    def health(self) -> str:
        """Empty when the backend answers; otherwise what is wrong, in plain words."""
        ...
