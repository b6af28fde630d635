"""Resource use of a local workload's replicas: CPU and memory of each replica's process
group, and accelerator figures when this machine has NVIDIA boards to ask about.

CPU is a rate, so it needs two readings: each call keeps the CPU seconds it saw in
``usage.json`` and the next call divides the difference by the time between them. The first
call reports the average since the replica started. No call sleeps to measure.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from pathlib import Path

from resources.backends.base import UsageSample
from resources.backends.local import host


def sample_usage(folder: Path, replicas: list[dict]) -> list[UsageSample]:
    import psutil

    previous = host.read_json(folder / "usage.json", {}) or {}
    now = time.time()
    readings: dict[str, dict] = {}
    samples = []
    boards = _nvidia_boards()
    for replica in replicas:
        record = replica.get("process")
        if not host.is_alive(record):
            continue
        cpu_seconds = 0.0
        rss = 0
        pids = set()
        for process in host.group_members(record["pid"]):
            with contextlib.suppress(psutil.Error):
                times = process.cpu_times()
                cpu_seconds += times.user + times.system + times.children_user
                cpu_seconds += times.children_system
                rss += process.memory_info().rss
                pids.add(process.pid)
        before = previous.get(replica["name"])
        if before and before.get("start") == record["start"] and now > before["time"]:
            elapsed, used = now - before["time"], cpu_seconds - before["cpu"]
        else:
            try:
                elapsed = now - psutil.Process(record["pid"]).create_time()
            except psutil.Error:
                continue
            used = cpu_seconds
        readings[replica["name"]] = {"cpu": cpu_seconds, "time": now, "start": record["start"]}
        util, memory = _accelerators(boards, pids, _slots(folder, replica["name"]))
        samples.append(
            UsageSample(
                replica=replica["name"],
                # A process that ended between readings takes its seconds with it: not < 0.
                cpu_percent=round(max(0.0, used) / max(elapsed, 1e-3) * 100, 1),
                memory_mib=round(rss / 2**20, 1),
                accelerator_util=util,
                accelerator_memory_mib=memory,
            )
        )
    host.write_json(folder / "usage.json", readings)
    return samples


def _slots(folder: Path, name: str) -> list[int]:
    launch = host.read_json(folder / "launch.json", {}) or {}
    for replica in launch.get("replicas", []):
        if replica["name"] == name:
            value = replica["env"].get("CONSOLE_VISIBLE_BOARDS", "")
            return [int(slot) for slot in value.split(",") if slot.strip().isdigit()]
    return []


def _nvidia_boards() -> dict | None:
    """Per board: utilisation, and memory used per pid; None without ``nvidia-smi`` (the
    local backend's boards may be bookkeeping only)."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        gpus = _query(["--query-gpu=index,utilization.gpu,uuid", "--format=csv,noheader,nounits"])
        apps = _query(
            ["--query-compute-apps=pid,used_memory,gpu_uuid", "--format=csv,noheader,nounits"]
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    by_uuid = {uuid: int(index) for index, _util, uuid in gpus}
    return {
        "util": {int(index): float(util) for index, util, _uuid in gpus},
        "memory": [(int(pid), float(mib), by_uuid.get(uuid)) for pid, mib, uuid in apps],
    }


def _query(arguments: list[str]) -> list[list[str]]:
    output = subprocess.run(
        ["nvidia-smi", *arguments], capture_output=True, text=True, timeout=5, check=True
    ).stdout
    return [[part.strip() for part in line.split(",")] for line in output.splitlines() if line]


def _accelerators(boards: dict | None, pids: set[int], slots: list[int]):
    if boards is None or not slots:
        return None, None
    utils = [boards["util"][slot] for slot in slots if slot in boards["util"]]
    memory = sum(mib for pid, mib, _index in boards["memory"] if pid in pids)
    return (round(sum(utils) / len(utils), 1) if utils else None), memory
