"""The local backend: this machine, split into the nodes the LOCAL_NODES setting describes.

Its boards are bookkeeping only (there may be no accelerator at all): jobs see them as
``CUDA_VISIBLE_DEVICES``-style indexes, which is enough for the demo cluster and the tests.
Workloads run as real processes under ``VAR_DIR/runs`` (see local_runner).
"""

from __future__ import annotations

import platform
import re
from pathlib import Path

from django.conf import settings

from console.config import ConfigError
from resources.backends.base import (
    NodeInfo,
    RecoveredWorkload,
    Shell,
    UsageSample,
    Workload,
    WorkloadStatus,
)
from resources.backends.local.layout import real_path
from resources.backends.local.runner import LocalRunner

NODE_PATTERN = re.compile(
    r"^(?P<name>[a-z0-9]([-a-z0-9]*[a-z0-9])?)"
    r":(?P<cpu>\d+(\.\d+)?)"
    r":(?P<memory>\d+(\.\d+)?)"
    r"(:(?P<boards>\d+)x(?P<model>[A-Za-z0-9][-A-Za-z0-9_.]*)(/(?P<slices>[1248]))?)?$"
)


def _os_name() -> str:
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME", platform.system())
    except OSError:
        return platform.system()


def parse_nodes(text: str, variable: str = "LOCAL_NODES") -> list[NodeInfo]:
    """Parse ``name:cpu:memoryGiB[:BOARDSxMODEL[/SLICES]]`` items separated by commas."""
    nodes = []
    seen = set()
    os_image = _os_name()
    kernel = platform.release()
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        match = NODE_PATTERN.match(item)
        if not match:
            raise ConfigError(
                variable,
                f"cannot read {item!r}: expected name:cpu:memoryGiB[:BOARDSxMODEL[/SLICES]], "
                "e.g. node-a:8:32:4xA100",
            )
        name = match["name"]
        if name in seen:
            raise ConfigError(variable, f"node {name!r} is listed twice")
        seen.add(name)
        boards = int(match["boards"] or 0)
        nodes.append(
            NodeInfo(
                name=name,
                cpu_millicores=round(float(match["cpu"]) * 1000),
                memory_mib=round(float(match["memory"]) * 1024),
                os_image=os_image,
                kernel=kernel,
                accelerator_model=match["model"] or "",
                accelerator_kind="GPU" if boards else "CPU",
                accelerator_memory_gib=16 if boards else 0,
                board_count=boards,
                slices_per_board=int(match["slices"] or 1),
                driver_version="local" if boards else "",
                labels={"console.io/backend": "local"},
            )
        )
    if not nodes:
        raise ConfigError(variable, "describes no node")
    return nodes


class LocalBackend:
    name = "local"
    # The console measures this machine before it starts anything (jobs.faults.prechecks).
    prechecks_in_workload = False

    def inventory(self) -> list[NodeInfo]:
        if settings.EXECUTION_BACKEND != "local":
            return []  # this machine runs no jobs: only clusters do
        return parse_nodes(settings.LOCAL_NODES)

    def health(self) -> str:
        return ""

    @property
    def runner(self) -> LocalRunner:
        # One runner per runs folder: the setting may change (tests), the backend is cached.
        root, storage, cache = settings.RUNS_DIR, settings.STORAGE_ROOT, settings.NODE_CACHE_DIR
        hidden = tuple(str(Path(p).resolve()) for p in (root, storage, cache))
        if self._runner is None or self._runner.hidden != hidden:
            # Isolated jobs see neither other jobs' folders, nor storage they do not mount,
            # nor prepared data but their own copies.
            self._runner = LocalRunner(root, hidden=(storage, cache), cache=cache)
        return self._runner

    _runner: LocalRunner | None = None

    def submit(self, workload: Workload) -> None:
        self.runner.submit(workload)

    def stop(self, workload_id: str, graceful_seconds: int) -> None:
        self.runner.stop(workload_id, graceful_seconds)

    def poll(self, workload_id: str) -> WorkloadStatus:
        return self.runner.poll(workload_id)

    def signal_node(self, node: str, signum: int) -> list[str]:
        return self.runner.signal_node(node, signum)

    def logs(
        self, workload_id: str, replica: str, offset: int = 0, limit: int = 65536
    ) -> tuple[str, int]:
        return self.runner.logs(workload_id, replica, offset, limit)

    def log_size(self, workload_id: str, replica: str) -> int:
        return self.runner.log_size(workload_id, replica)

    def path_names(self, workload_id: str, replica: str) -> dict[str, str]:
        return self.runner.path_names(workload_id, replica)

    def host_path(self, workload_id: str, replica: str, path: str) -> Path:
        return Path(real_path(path, str(self.runner.root / workload_id / replica)))

    def usage(self, workload_id: str) -> list[UsageSample]:
        return self.runner.usage(workload_id)

    def cleanup(self, workload_id: str) -> None:
        self.runner.cleanup(workload_id)

    def open_shell(self, workload_id: str, replica: str, rows: int, cols: int) -> Shell:
        return self.runner.open_shell(workload_id, replica, rows, cols)

    def discard_kept(self, workload_id: str) -> bool:
        return self.runner.discard_kept(workload_id)

    def recover(self) -> list[RecoveredWorkload]:
        return self.runner.recover()
