"""What the local supervisor does around a workload's own command: data preparation before
anything starts (SPEC J19, see local_prepared) and the lifecycle scripts (SPEC J23).

When each runs, and why:

* Data preparation first, node by node: every dataset a replica of the node mounts is copied
  (or found current and reused), and the replicas there then mount the copy read-only at the
  same target. A failure (source missing, disk full) fails the workload before any script or
  command of the user's runs; a stop during it ends the workload at once.
* "Before start" on every replica (each of the job's nodes, parameter servers and MPI peers
  included), all at once, as the replica's own process would run: its identity, environment,
  working folder (/workspace) and mount namespace. The replicas' commands start once every
  one of them has ended with 0. One failing or timing out fails the workload (the commands
  never run) naming the replica, its node, the exit code and its last line of output. A stop
  meanwhile kills the scripts at once (nothing of the job has started: nothing to save).
* "On failure" when the workload failed after its commands started, then "after stop" for
  any end (success, failure, stop, expiry), on every replica, once all of its processes have
  ended: after the SIGTERM and the graceful time of a stop, so a stop ends within graceful
  time + script timeout (+ the on-failure script's timeout when the job failed first).
* Each script may run for the workload's ``timeout_seconds``; then its process group is
  killed. Its output goes to the replica's log between two headings.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from resources.backends.base import job_paths
from resources.backends.local import prepared as local_prepared
from resources.backends.local.host import read_json, reaped, signal_group
from resources.backends.local.layout import job_folders, real_path

PROGRESS_NOTE_SECONDS = 15.0  # between two progress notes of one copy
TICK = 0.05
POINTS = {"before_start": "before start", "on_failure": "on failure", "after_stop": "after stop"}


def stop_requested(supervisor) -> bool:
    return supervisor.terminated or read_json(supervisor.folder / "stop.json") is not None


def note(supervisor, kind: str, **facts) -> None:
    supervisor.notes.append({"kind": kind, "facts": facts})
    supervisor.save()


# --- data preparation ---------------------------------------------------------------------------


def prepare_data(supervisor) -> None:
    """Copy (or reuse) each dataset on each node; sets the supervisor's outcome on failure."""
    items = supervisor.launch.get("prepare") or []
    if not items:
        return
    cache = Path(supervisor.launch["cache"])
    nodes = list(dict.fromkeys(r.spec.get("node", "") for r in supervisor.replicas))
    for node in nodes:
        here = [r for r in supervisor.replicas if r.spec.get("node", "") == node]
        for item in items:
            users = [r for r in here if item["target"] in r.spec.get("mount_targets", ())]
            if not users:
                continue
            try:
                prepared = _prepare_one(supervisor, cache, node or "local", item)
            except local_prepared.Stopped:
                supervisor.outcome = ("stopped", "stopped on request")
                return
            except (local_prepared.PrepareFailed, OSError) as error:
                words = getattr(error, "strerror", None) or str(error)
                note(supervisor, "prepare_failed", node=node, label=item["label"], error=words)
                reason = f"data preparation of {item['label']} failed on {node}: {words}"
                supervisor.outcome = ("failed", reason)
                return
            supervisor.held.append(prepared)
            supervisor.mounted[str(prepared.path)] = item["target"]
            for replica in users:
                _mount_copy(replica, item, prepared.path)
            if prepared.reused:
                note(supervisor, "reused", node=node, label=item["label"], total=prepared.total)
            else:
                note(
                    supervisor, "prepared", node=node, label=item["label"],
                    total=prepared.total, seconds=round(prepared.seconds, 1),
                )  # fmt: skip


def _prepare_one(supervisor, cache: Path, node: str, item: dict) -> local_prepared.Prepared:
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if done == 0 or now - last[0] >= PROGRESS_NOTE_SECONDS:
            last[0] = now
            note(supervisor, "preparing", node=node, label=item["label"], done=done, total=total)

    return local_prepared.prepare(
        cache, node, Path(item["source"]), progress=progress,
        stop_requested=lambda: stop_requested(supervisor),
    )  # fmt: skip


def _mount_copy(replica, item: dict, copy: Path) -> None:
    """The replica's mount of ``item`` now shows the copy, read-only."""
    link = Path(real_path(item["target"], str(replica.dir)))
    with contextlib.suppress(FileNotFoundError):
        link.unlink()
    link.symlink_to(copy)
    plan = replica.spec.get("isolation")
    if plan:
        source = str(Path(item["source"]).resolve())
        plan["binds"] = [b for b in plan["binds"] if b[0] != source] + [[str(copy), True]]


def release_data(supervisor) -> None:
    for prepared in supervisor.held:
        local_prepared.release(prepared)
    supervisor.held = []


# --- lifecycle scripts --------------------------------------------------------------------------


class Script:
    def __init__(self, replica, point: str, log_offset: int):
        self.replica = replica
        self.point = point
        self.offset = log_offset
        self.pid: int | None = None
        self.started = time.monotonic()
        self.exit_code: int | None = None
        self.timed_out = False


def run_scripts(supervisor, point: str) -> bool:
    """Run ``point``'s script on every replica that has one and wait for them all; False if
    one failed or timed out (for "before start": the outcome then says so)."""
    scripts = []
    for replica in supervisor.replicas:
        text = (replica.spec.get("scripts") or {}).get(point, "")
        if text:
            scripts.append(_start(supervisor, replica, point, text))
    if not scripts:
        return True
    timeout = _timeout(supervisor)
    killed = False
    while any(s.exit_code is None for s in scripts):
        _reap(supervisor, scripts)
        now = time.monotonic()
        for script in scripts:
            if script.exit_code is None and now - script.started > timeout:
                script.timed_out = True
                signal_group(script.pid, signal.SIGKILL)
        if point == "before_start" and not killed and stop_requested(supervisor):
            killed = True
            supervisor.outcome = ("stopped", "stopped on request")
            for script in scripts:
                if script.exit_code is None:
                    signal_group(script.pid, signal.SIGKILL)
        supervisor.save()
        time.sleep(TICK)
    failed = []
    for script in scripts:
        if point != "before_start" and script.pid is not None:
            signal_group(script.pid, signal.SIGKILL)  # whatever it left running
        failed += [] if _end(supervisor, script, killed) else [script]
    if failed and point == "before_start" and supervisor.outcome is None:
        first = failed[0]
        replica = first.replica
        replica.state, replica.exit_code = "failed", first.exit_code
        replica.reason = _how(first, timeout)
        node = replica.spec.get("node", "")
        last = _last_line(supervisor, first)
        supervisor.outcome = (
            "failed",
            f"the before start script {replica.reason} on {node} ({replica.label})"
            + (f"; last output: {last}" if last else ""),
        )
    return not failed


def _start(supervisor, replica, point: str, text: str) -> Script:
    heading = f"── {POINTS[point]} script ──\n".encode()
    path = replica.dir / "log.txt"
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(log, heading)
        script = Script(replica, point, os.fstat(log).st_size)
        argv = [_shell(), "-c", text]
        try:
            script.pid = supervisor.popen(replica.spec, argv, log)
        except (OSError, subprocess.SubprocessError) as error:
            words = getattr(error, "strerror", None) or "could not isolate it from other jobs"
            os.write(log, f"console: cannot run the script: {words}\n".encode())
            script.exit_code = 127
    finally:
        os.close(log)
    return script


def _shell() -> str:
    return "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


def _reap(supervisor, scripts: list[Script]) -> None:
    by_pid = {s.pid: s for s in scripts if s.pid is not None and s.exit_code is None}
    for pid, code, _signum in reaped():
        if pid in by_pid:
            by_pid[pid].exit_code = code
        elif pid in supervisor.by_pid:  # a replica (in case one is still being reaped)
            supervisor.ended(supervisor.by_pid[pid], code)


def _end(supervisor, script: Script, killed: bool) -> bool:
    seconds = time.monotonic() - script.started
    code = script.exit_code
    if script.timed_out:
        seconds = _timeout(supervisor)
        how = _how(script, seconds)
    elif killed:
        how = "killed: the job was stopped"
    else:
        how = f"exit {code}, {seconds:.1f} s"
    end = f"── end of {POINTS[script.point]} script ({how}) ──\n"
    with open(script.replica.dir / "log.txt", "a", encoding="utf-8") as log:
        log.write(end)
    replica = script.replica
    note(
        supervisor, "script", point=script.point, node=replica.spec.get("node", ""),
        replica=replica.label, exit_code=code, seconds=round(seconds, 1),
        timed_out=script.timed_out, stopped=killed, last_line=_last_line(supervisor, script),
    )  # fmt: skip
    return code == 0 and not script.timed_out and not killed


def _timeout(supervisor) -> float:
    """How long each script may run (the admin's limit, in the workload's launch)."""
    return float(supervisor.launch.get("script_timeout_seconds", 300))


def _how(script: Script, timeout: float) -> str:
    if script.timed_out:
        return f"timed out after {timeout:g} s"
    return f"exited with code {script.exit_code}"


def _last_line(supervisor, script: Script) -> str:
    """The script's last line of output (its end heading excluded), at most 200 characters."""
    try:
        with open(script.replica.dir / "log.txt", "rb") as log:
            size = os.fstat(log.fileno()).st_size
            start = max(script.offset, size - 8192)
            log.seek(start)
            text = log.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("── end of ")]
    return _job_words(supervisor, script.replica, lines[-1])[:200] if lines else ""


def _job_words(supervisor, replica, text: str) -> str:
    """``text`` with this machine's folders named as the job knows them (/workspace/...)."""
    from resources.backends.base import DEFAULT_PATH

    record = read_json(supervisor.folder / "workload.json") or {}
    folders = job_folders(record, str(supervisor.folder), replica.name, DEFAULT_PATH)
    folders.update(supervisor.mounted)
    return job_paths(text, folders)
