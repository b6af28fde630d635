"""A local workload's state on disk (``state.json``, written by its supervisor) as the
backend reports it, and ending a workload whose supervisor is gone: killing what it left and
writing its final state for it. Shared by the runner's poll, clean-up and recovery."""

from __future__ import annotations

import os
from pathlib import Path

from resources.backends.base import (
    Note,
    ReplicaState,
    ReplicaStatus,
    WorkloadState,
    WorkloadStatus,
)
from resources.backends.local import host

FINISHED = frozenset({"succeeded", "failed", "stopped"})


def finished(state: dict | None) -> bool:
    return bool(state) and state.get("state") in FINISHED


def status(state: dict) -> WorkloadStatus:
    return WorkloadStatus(
        state=WorkloadState(state["state"]),
        replicas=tuple(
            ReplicaStatus(r["name"], ReplicaState(r["state"]), r["exit_code"], r["reason"])
            for r in state["replicas"]
        ),
        reason=state["reason"],
        notes=tuple(
            Note(number, note["kind"], note["facts"])
            for number, note in enumerate(state.get("notes", ()))
        ),
    )


def process(pid: int):
    import psutil

    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def end_orphaned(folder: Path, graceful: float, why: str) -> tuple[dict, int]:
    """End a workload nobody supervises any more: kill what it left (after ``graceful``
    seconds of SIGTERM) and write its final state; (that state, how many were killed)."""
    with host.locked(folder / ".lock"):
        state = host.read_json(folder / "state.json")
        if finished(state):
            return state, 0
        killed = host.kill_processes(processes_of(folder, state), graceful)
        stopped = host.read_json(folder / "stop.json") is not None
        reason = (
            "stopped on request"
            if stopped
            else why + (f"; {killed} process(es) it left were killed" if killed else "")
        )
        return finish(folder, "stopped" if stopped else "failed", reason), killed


def processes_of(folder: Path, state: dict | None) -> list:
    """Every process of the workload still alive: those carrying its marker, and the
    groups of replica leaders that are verifiably ours (pid and start time match)."""
    import psutil

    found = {p.pid: p for p in host.marked_processes(str(folder))}
    for replica in (state or {}).get("replicas", []):
        record = replica.get("process")
        if host.is_alive(record):
            for process in host.group_members(record["pid"]):
                found.setdefault(process.pid, process)
    return [p for p in found.values() if p.pid != os.getpid() and psutil.pid_exists(p.pid)]


def finish(folder: Path, final: str, reason: str) -> dict:
    state = host.read_json(folder / "state.json") or {"replicas": []}
    for replica in state["replicas"]:
        if replica["state"] not in FINISHED:
            code = folder / replica["name"] / "exit_code"
            replica["exit_code"] = int(code.read_text()) if code.exists() else None
            replica["state"] = "stopped" if final == "stopped" else "failed"
            replica["reason"] = reason
    state.update(state=final, reason=reason)
    host.write_json(folder / "state.json", state)
    return state
