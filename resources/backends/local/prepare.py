"""What :meth:`LocalRunner.submit` lays out before anything runs: checks of the workload,
permissions of the mount sources, each replica's folder, and ``launch.json`` (argv and
environment of every replica, rewritten for this machine) for the supervisor."""

from __future__ import annotations

import logging
import os
import re
from functools import partial
from pathlib import Path

from resources.backends.base import DEFAULT_PATH, BackendError, ReplicaSpec, Workload
from resources.backends.local import host, users
from resources.backends.local.layout import (
    FOLDER_NAME,
    MAX_REPLICAS,
    PEER_PORT,
    WORKSPACE,
    container_path_parts,
    host_map,
    local_hostfile,
    localize,
    real_path,
    replica_address,
    replica_env,
    rewritten_paths,
)

log = logging.getLogger(__name__)

REPLICA_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
OUTPUTS = f"{WORKSPACE}/outputs"


def check_workload(workload: Workload) -> None:
    """Refuse what cannot run as asked, before anything is created."""
    if not FOLDER_NAME.fullmatch(workload.id) or not FOLDER_NAME.fullmatch(workload.workdir_name):
        raise ValueError(f"workload id and folder must be folder names: {workload.id!r}")
    replicas = workload.replicas
    if not 1 <= len(replicas) <= MAX_REPLICAS:
        raise ValueError(f"a local workload has 1 to {MAX_REPLICAS} replicas, not {len(replicas)}")
    if len({r.name for r in replicas}) != len(replicas):
        raise ValueError("replica names must be unique")
    if not any(r.awaited for r in replicas):
        raise ValueError("no replica is awaited: the workload could never succeed")
    if workload.graceful_seconds < 0 or workload.peer_timeout_seconds < 1:
        raise ValueError("graceful_seconds must be >= 0 and peer_timeout_seconds >= 1")
    for replica in replicas:
        if not REPLICA_NAME.fullmatch(replica.name):
            raise ValueError(f"replica name is not a DNS label: {replica.name!r}")
        if replica.runs_entry and not replica.argv:
            raise ValueError(f"{replica.label} runs the entry command but has no argv")
        if replica.awaited and not replica.runs_entry:
            raise ValueError(f"{replica.label} is awaited but runs nothing: it would never end")
        targets = []
        for source, target, _read_only in replica.mounts:
            if not Path(source).is_absolute():
                raise ValueError(f"mount source is not absolute: {source!r}")
            container_path_parts(target)
            if str(Path(target)) == WORKSPACE:
                raise ValueError("a mount cannot replace /workspace itself")
            targets.append(str(Path(target)))
        for path in replica.files:
            container_path_parts(path)
            if any(path == t or path.startswith(t + "/") for t in targets):
                raise ValueError(f"file {path} would be written into a mount")


def prepare_sources(workload: Workload, user: users.JobUser | None, *, isolated: bool) -> None:
    """Every mount source exists (a writable one is made if missing: a batch sub-task's
    outputs folder), the job user can reach it, and its permissions say its mode (isolated
    jobs: only let any job identity in; see local_runner_isolation)."""
    read_only: dict[str, bool] = {}
    targets: dict[str, str] = {}
    for replica in workload.replicas:
        for source, target, ro in replica.mounts:
            read_only[source] = read_only.get(source, False) or ro  # read-only wins
            targets.setdefault(source, target)
    for source, ro in read_only.items():
        path = Path(source)
        # Said on the job's page, so named by the job's path: the user knows no host folder.
        if not path.exists():
            if ro:
                raise BackendError(f"the folder mounted at {targets[source]} does not exist")
            host.make_dirs(path)  # e.g. a batch sub-task's outputs folder
        blocked = users.unreachable_ancestor(path, user)
        if blocked is not None:
            log.warning("the job user cannot enter %s (for %s)", blocked, source)
            raise BackendError(
                f"the job's user cannot reach the folder mounted at {targets[source]}"
            )
        if isolated:
            users.open_source(path, read_only=ro)
        else:
            users.prepare_source(path, user, read_only=ro)


def lay_out(
    workload: Workload,
    *,
    folder: Path,
    staging: Path,
    block: tuple[int, int],
    user: users.JobUser | None,
    hidden: tuple[str, ...] | None = None,
    cache: Path | None = None,
) -> dict:
    """Each replica's folder, and what the supervisor runs: argv and environment with
    in-container paths and host names rewritten for this machine. With ``hidden`` (the
    folders isolated jobs must not see), each replica says what its namespace shows.
    ``cache``: the nodes' fast storage, where the supervisor prepares data (SPEC J19)."""
    replicas = workload.replicas
    addresses = [replica_address(block, i) for i in range(len(replicas))]
    names = [(r.name, r.aliases) for r in replicas]
    every_name = {alias for name, aliases in names for alias in (name, *aliases)}
    launch_replicas = []
    for position, replica in enumerate(replicas):
        real_dir = str(folder / replica.name)
        work = staging / replica.name
        _make_private_folders(work, user)
        rewrite = partial(
            localize,
            replica_dir=real_dir,
            paths=rewritten_paths(replica.files, (m[1] for m in replica.mounts)),
            hosts=host_map(names, addresses, own=addresses[position]),
        )
        _link_mounts(replica, work, user)
        _write_files(replica, work, every_name, rewrite)
        env = replica_env(
            base=_base_env(replica, real_dir, user),
            plan_env=replica.env,
            localize_text=rewrite,
            slots=replica.slots,
            address=addresses[position],
            marker=(host.MARKER, str(folder)),
        )
        isolation = _isolation(replica, real_dir, user, hidden)
        launch_replicas.append(
            _launch_replica(
                workload, replica, real_dir, addresses[position], env, isolation, rewrite
            )
        )
    return _launch_file(workload, block, user, launch_replicas, cache)


def _make_private_folders(work: Path, user: users.JobUser | None) -> None:
    """The replica's own folder, with its workspace, home and tmp given to the job user."""
    host.make_dirs(work)
    for sub in ("workspace", "home", "tmp"):
        host.make_dirs(work / sub)
        users.give_to(work / sub, user)


def _link_mounts(replica: ReplicaSpec, work: Path, user: users.JobUser | None) -> None:
    """Each mount as a link to its source where the job sees it, and an outputs folder of
    the replica's own when no mount provides one."""
    for source, target, _read_only in replica.mounts:
        link = Path(real_path(target, str(work)))
        host.make_dirs(link.parent)
        link.symlink_to(source)
    if not any(str(Path(m[1])) == OUTPUTS for m in replica.mounts):
        host.make_dirs(work / "workspace" / "outputs")
        users.give_to(work / "workspace" / "outputs", user)


def _write_files(replica: ReplicaSpec, work: Path, every_name: set[str], rewrite) -> None:
    """The plan's files (hostfiles, scripts), rewritten for this machine."""
    for path, text in replica.files.items():
        # Every replica here is on this machine, one node or many: a launcher (mpirun,
        # deepspeed) given its own replica's name would reach it over ssh.
        local = local_hostfile(text, every_name)
        target = Path(real_path(path, str(work)))
        host.make_dirs(target.parent)
        target.write_text(local if local is not None else rewrite(text), encoding="utf-8")
        target.chmod(0o644)


def _base_env(replica: ReplicaSpec, real_dir: str, user: users.JobUser | None) -> dict[str, str]:
    """The environment every replica starts from, before the plan's own variables."""
    return {
        "PATH": users.searchable_path(os.environ.get("PATH") or DEFAULT_PATH, user),
        "LANG": "C.UTF-8",
        "HOME": f"{real_dir}/home",
        "TMPDIR": f"{real_dir}/tmp",
        "USER": user.name if user else os.environ.get("USER", ""),
        "LOGNAME": user.name if user else os.environ.get("USER", ""),
        "HOSTNAME": replica.name,
        "PYTHONUNBUFFERED": "1",  # live logs: Python buffers a file's output otherwise
        # Set, if empty, as an image would set it: seed 000's mpirun prefix forwards it
        # (-x LD_LIBRARY_PATH), and Open MPI warns in the log of every MPI job without it.
        "LD_LIBRARY_PATH": "",
    }


def _isolation(
    replica: ReplicaSpec, real_dir: str, user: users.JobUser | None, hidden: tuple[str, ...] | None
) -> dict | None:
    """What an isolated replica's namespace shows and who it runs as; None when not isolated."""
    if hidden is None or user is None:
        return None
    sources = sorted({str(Path(m[0]).resolve()): m[2] for m in replica.mounts}.items())
    return {
        "hidden": list(hidden),
        "binds": [[real_dir, False], *([s, ro] for s, ro in sources)],
        "uid": user.uid,
        "gid": user.gid,
        "groups": [user.gid, *user.groups],
        "cwd": f"{real_dir}/workspace",
    }


def _launch_replica(
    workload: Workload,
    replica: ReplicaSpec,
    real_dir: str,
    address: str,
    env: dict,
    isolation,
    rewrite,
) -> dict:
    """One replica's entry in ``launch.json``."""
    return {
        "isolation": isolation,
        "name": replica.name,
        "label": replica.label,
        "dir": real_dir,
        "cwd": f"{real_dir}/workspace",
        # The plan has already filled in $VARIABLES (jobs.launch.commands).
        "argv": [rewrite(arg) for arg in replica.argv],
        "program": replica.argv[0] if replica.argv else "",
        "env": env,
        "address": address,
        "peer_port": PEER_PORT,
        "runs_entry": replica.runs_entry,
        "awaited": replica.awaited,
        "node": replica.node,
        "mount_targets": [str(Path(m[1])) for m in replica.mounts],
        # Shell text: /workspace paths and peers' names rewritten like the argv.
        "scripts": {
            point: rewrite(text)
            for point in ("before_start", "on_failure", "after_stop")
            if (text := getattr(workload.scripts, point))
        },
    }


def _launch_file(
    workload: Workload,
    block: tuple[int, int],
    user: users.JobUser | None,
    launch_replicas: list[dict],
    cache: Path | None,
) -> dict:
    """``launch.json`` as a whole: the workload's settings and its replicas' entries."""
    return {
        "id": workload.id,
        "block": list(block),
        "graceful_seconds": workload.graceful_seconds,
        "wait_for_peers": workload.wait_for_peers,
        "peer_timeout_seconds": workload.peer_timeout_seconds,
        "user": {"uid": user.uid, "gid": user.gid, "groups": list(user.groups)} if user else None,
        "replicas": launch_replicas,
        "cache": str(cache) if cache is not None else "",
        "prepare": [
            {"source": d.source, "target": str(Path(d.target)), "label": d.label}
            for d in workload.prepare_data
        ],
        "script_timeout_seconds": workload.scripts.timeout_seconds,
    }


def pending_state(workload: Workload) -> dict:
    return {
        "state": "pending",
        "reason": "",
        "replicas": [
            {"name": r.name, "state": "pending", "exit_code": None, "reason": "", "process": None}
            for r in workload.replicas
        ],
    }
