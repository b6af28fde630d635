"""Pure rules of the local runner: where a replica's in-container paths live on this machine,
which loopback address stands for each host name, and the environment a replica gets.

Processes here share one file system and one network, so what a container gets from mounts
and DNS the local runner gets by rewriting text (argv words, environment values, the plan's
files) before anything starts:

* Paths. A replica's folder ``<root>/<workload>/<replica>/`` plays the container's ``/``
  for the paths the plan uses: ``/workspace/...`` -> ``<replica>/workspace/...`` (SPEC W's
  layout, made of symbolic links to the mount sources), and every file or mount target the
  plan names (``/etc/mpi/hostfile``, ``/job/hostfile``) -> ``<replica>/<same path>``. Other
  absolute paths (``/usr/bin/python3``, ``/etc/passwd``) are the machine's and stay.
* Hosts. Every replica gets its own loopback address (Linux routes all of 127.0.0.0/8 to
  ``lo``), so two replicas can listen on the same port, as in two containers. Its host name
  and aliases become that address; ``localhost`` becomes the replica's own address too,
  because the plan uses it to mean "this replica" (rank 0's MASTER_ADDR) and its peers must
  reach what it listens on there.

Rewriting is one pass over the text: a replaced path that happens to contain a host name is
not rewritten again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath

from resources.backends.base import PATH_AFTER, PATH_BEFORE

WORKSPACE = "/workspace"
LOCALHOST = "localhost"

# Where a peer that runs no command of its own listens, as a container's sshd would: the entry
# replica starts once every peer accepts connections there (seed 002). Every replica has its
# own address, so one port for all never clashes.
PEER_PORT = 2022

# The host part of 127.B.C.X is the replica's position + 1: a workload holds one /24.
MAX_REPLICAS = 254

# A name that becomes one folder: no separators, not hidden.
FOLDER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
# Paths we put into commands must survive a ``bash -c "..."`` unquoted.
SHELL_SAFE_PATH = re.compile(r"/[A-Za-z0-9_./-]*")

_NAME_BEFORE = r"(?<![\w.\-])"  # "http://host:80" and "user@host" are host names
_NAME_AFTER = r"(?![\w\-]|\.[A-Za-z0-9])"  # "host.sub" is another name (an alias, if any)


def container_path_parts(path: str) -> tuple[str, ...]:
    """The parts of an absolute in-container path; ValueError for one that could leave the
    replica's folder (relative, or with ``..``)."""
    pure = PurePosixPath(path)
    if not pure.is_absolute() or ".." in pure.parts or len(pure.parts) < 2:
        raise ValueError(f"not an absolute path inside the container: {path!r}")
    return pure.parts[1:]


def real_path(path: str, replica_dir: str) -> str:
    """Where an in-container path lives on this machine: ``<replica_dir>/<path>``."""
    return str(PurePosixPath(replica_dir, *container_path_parts(path)))


def rewritten_paths(files: Iterable[str], mount_targets: Iterable[str]) -> tuple[str, ...]:
    """The in-container paths :func:`localize` rewrites: /workspace, the plan's files and the
    mount targets outside /workspace."""
    paths = {WORKSPACE}
    for path in (*files, *mount_targets):
        normal = str(PurePosixPath(path))
        if normal != WORKSPACE and not normal.startswith(WORKSPACE + "/"):
            paths.add(normal)
    return tuple(sorted(paths))


def localize(text: str, *, replica_dir: str, paths: Iterable[str], hosts: Mapping[str, str]) -> str:
    """``text`` with each in-container path of ``paths`` (and what lies under it) moved under
    ``replica_dir``, and each host name of ``hosts`` replaced by its address, in one pass."""
    replacements = {path: real_path(path, replica_dir) for path in paths}
    alternatives = [
        PATH_BEFORE + re.escape(path) + PATH_AFTER
        for path in sorted(replacements, key=len, reverse=True)
    ]
    alternatives += [
        _NAME_BEFORE + re.escape(name) + _NAME_AFTER
        for name in sorted(hosts, key=len, reverse=True)
    ]
    if not alternatives:
        return text
    replacements.update(hosts)
    pattern = re.compile("|".join(alternatives))
    return pattern.sub(lambda match: replacements[match.group(0)], text)


IMAGE_PREFIX = "/usr/local"  # where an image's own Python lives, as a container shows it


def job_folders(record: Mapping, folder: str, replica: str, system_path: str) -> dict[str, str]:
    """Host folder -> the job's path for it, for replica ``replica`` of the submitted
    workload ``record`` kept in ``folder``: every replica's folder is its ``/``, each mount
    source of ``replica`` is the mount's target, and the folders ahead of ``system_path`` on
    its PATH (the image's runtime, standing in for the image's Python) are /usr/local."""
    folders = {f"{folder}/{spec['name']}": "/" for spec in record.get("replicas", ())}
    system = set(system_path.split(":"))
    for spec in record.get("replicas", ()):
        if spec["name"] != replica:
            continue
        folders.update({source: target for source, target, *_ in spec.get("mounts", ())})
        for entry in spec.get("env", {}).get("PATH", "").split(":"):
            if entry in system:
                break
            if entry.endswith("/bin") and len(PurePosixPath(entry).parts) > 2:
                folders[str(PurePosixPath(entry).parent)] = IMAGE_PREFIX
    return folders


def replica_address(block: tuple[int, int], position: int) -> str:
    """The loopback address of the replica at ``position`` in a workload holding ``block``."""
    second, third = block
    if not (1 <= second <= 255 and 0 <= third <= 255 and 0 <= position < MAX_REPLICAS):
        raise ValueError(f"no loopback address for block {block} position {position}")
    return f"127.{second}.{third}.{position + 1}"


def host_map(
    names: Sequence[tuple[str, Sequence[str]]], addresses: Sequence[str], own: str
) -> dict[str, str]:
    """Host name (and alias) -> address for every replica, and ``localhost`` -> ``own``."""
    hosts = {LOCALHOST: own}
    for (name, aliases), address in zip(names, addresses, strict=True):
        for alias in (name, *aliases):
            hosts[alias] = address
    return hosts


_OPENMPI_LINE = re.compile(r"(?P<host>\S+)\s+slots=(?P<slots>\d+)")
_MPICH_LINE = re.compile(r"(?P<host>[^\s:]+):(?P<slots>\d+)")


def local_hostfile(text: str, names: Iterable[str]) -> str | None:
    """A hostfile listing the workload's replicas, turned into one line for this machine.

    OpenMPI takes any host that is not one of its own interface addresses for a remote one
    and reaches it over ssh, which replicas here do not run. So the launcher gets
    ``localhost`` with every slot of the job (``localhost slots=<total>``, MPICH
    ``localhost:<total>``) and starts all ranks inside the entry replica; the peers stay up
    as the no-op waiters they are. None when ``text`` is not such a hostfile.
    """
    known = set(names)
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    for pattern, render in (
        (_OPENMPI_LINE, "localhost slots={}\n"),
        (_MPICH_LINE, "localhost:{}\n"),
    ):
        matches = [pattern.fullmatch(line) for line in lines]
        if lines and all(m is not None and m["host"] in known for m in matches):
            return render.format(sum(int(m["slots"]) for m in matches if m is not None))
    return None


def boards_env(slots: Sequence[int]) -> dict[str, str]:
    """The boards a replica may use, as CUDA-style device indexes.

    CUDA_VISIBLE_DEVICES lists the physical slots the scheduler gave the replica; an empty
    value (a CPU replica) hides every board, as a container without devices would.
    CONSOLE_VISIBLE_BOARDS says the same for scripts that are not CUDA programs.
    """
    value = ",".join(str(slot) for slot in slots)
    return {"CUDA_VISIBLE_DEVICES": value, "CONSOLE_VISIBLE_BOARDS": value}


def replica_env(
    *,
    base: Mapping[str, str],
    plan_env: Mapping[str, str],
    localize_text,
    slots: Sequence[int],
    address: str,
    marker: tuple[str, str],
) -> dict[str, str]:
    """What a replica's process sees: a small base (never the worker's own environment,
    which holds the console's secrets), the plan's variables rewritten for this machine, then
    the local runner's own. HYDRA_IFACE names a container's interface; here it is ``lo``."""
    env = dict(base)
    env.update({name: localize_text(value) for name, value in plan_env.items()})
    if "HYDRA_IFACE" in env:
        env["HYDRA_IFACE"] = "lo"
    env.update(boards_env(slots))
    env["CONSOLE_REPLICA_ADDRESS"] = address
    env["CONSOLE_PEER_PORT"] = str(PEER_PORT)
    name, value = marker
    env[name] = value
    return env
