"""What the modes share: replica names and addresses, the variables every replica gets,
hostfiles, the seed-002 MPI variables, the PyTorch variables, and assembling a replica."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from jobs.launch.commands import expand_variables
from jobs.launch.request import LaunchRequest
from jobs.launch.types import ENV_PREFIX, OUTPUTS_DIR, PEER_ENV_PREFIX, ReplicaPlan

MAX_HOSTNAME = 63  # a DNS label, and Kubernetes' limit for a pod's hostname


@dataclass(frozen=True)
class Host:
    hostname: str
    address: str


def hosts(request: LaunchRequest, role: str, count: int) -> list[Host]:
    """``<job>-<role>-<index>``: stable across restarts, so logs and bookmarks keep meaning."""
    found = []
    for index in range(count):
        name = f"{request.job_name}-{role}-{index}"
        if len(name) > MAX_HOSTNAME:
            raise ValueError(
                f"replica hostname {name!r} is longer than {MAX_HOSTNAME} characters: "
                "the job name is too long for this many replicas"
            )
        address = f"{name}.{request.subdomain}" if request.subdomain else name
        found.append(Host(hostname=name, address=address))
    return found


def worker_hosts(request: LaunchRequest) -> list[Host]:
    return hosts(request, "worker", request.node_count)


def openmpi_hostfile(workers: Sequence[Host], slots: int) -> str:
    """``host slots=N`` per line: OpenMPI's format, also read by DeepSpeed."""
    return "".join(f"{host.address} slots={slots}\n" for host in workers)


def mpich_hostfile(workers: Sequence[Host], slots: int) -> str:
    return "".join(f"{host.address}:{slots}\n" for host in workers)


def mpi_style_env(request: LaunchRequest, workers: Sequence[Host], hostfile: str) -> dict[str, str]:
    """Seed 002's variables, under our prefix and again under the peer's (``MLP_``).

    ``WORKER_GPU`` is the number of boards a worker sees (a slice counts as one), 0 for CPU
    specs, so that ``MPI_NP`` = ``WORKER_NUM`` x ``WORKER_GPU`` holds for accelerator specs
    and ``MPI_NP`` = ``WORKER_NUM`` for CPU ones, as the seed states.
    """
    values = {
        "WORKER_NUM": str(request.node_count),
        "WORKER_GPU": str(request.slots if request.boards > 0 else 0),
        "MPI_HOSTS": ",".join(f"{host.address}:{request.slots}" for host in workers),
        "MPI_HOSTFILE": hostfile,
        "MPI_NP": str(request.process_count),
        "WORKER_0_HOST": workers[0].address,
    }
    return {
        f"{prefix}{name}": value
        for prefix in (ENV_PREFIX, PEER_ENV_PREFIX)
        for name, value in values.items()
    }


def master_addr(rank: int, master: Host) -> str:
    # Seed 000 runs the master with --master_addr=localhost and the others with the master's
    # address; the variables say the same as the command.
    return "localhost" if rank == 0 else master.address


def torch_env(request: LaunchRequest, rank: int, master: Host) -> dict[str, str]:
    """Seed 000's PyTorch variables. WORLD_SIZE is the node count and RANK the node rank, as
    the seed's ``torchrun --nnodes ${WORLD_SIZE} --node_rank ${RANK}`` example needs; the
    launchers give each process its own per-process values anyway."""
    return {
        "MASTER_ADDR": master_addr(rank, master),
        "MASTER_PORT": str(request.port),
        "WORLD_SIZE": str(request.node_count),
        "RANK": str(rank),
        "SLOTS": str(request.slots),
    }


def check_outputs(request: LaunchRequest) -> None:
    """A batch sub-task writes to /workspace/outputs like any job (SPEC J3: the script does
    not need to know); its outputs mount must already point at ``<output path>/<subdir>``,
    as ``resources.catalog.mounts.mount_outputs(..., index=i)`` builds it. Refusing a mount
    that does not keeps two sub-tasks from writing into one folder."""
    if request.output_subdir is None:
        return
    for mount in request.mounts:
        if str(PurePosixPath(str(mount.target))) != OUTPUTS_DIR:
            continue
        if PurePosixPath(str(mount.source)).name != request.output_subdir:
            raise ValueError(
                f"the outputs mount {mount.source!r} is not the sub-task's folder "
                f"{request.output_subdir!r}"
            )


def common_env(request: LaunchRequest, role: str, index: int, host: Host) -> dict[str, str]:
    env = {
        f"{ENV_PREFIX}JOB_NAME": request.job_name,
        f"{ENV_PREFIX}MODE": request.mode,
        f"{ENV_PREFIX}REPLICA_ROLE": role,
        f"{ENV_PREFIX}REPLICA_INDEX": str(index),
        f"{ENV_PREFIX}REPLICA_HOST": host.address,
        f"{ENV_PREFIX}WORKER_NUM": str(request.node_count),
        f"{ENV_PREFIX}OUTPUT_DIR": OUTPUTS_DIR,
    }
    if request.output_subdir is not None:
        env[f"{ENV_PREFIX}OUTPUT_SUBDIR"] = request.output_subdir
    return env


def replica(
    request: LaunchRequest,
    *,
    role: str,
    index: int,
    host: Host,
    argv: Sequence[str],
    env: Mapping[str, str],
    files: Mapping[str, str] | None = None,
    runs_entry: bool = True,
    awaited: bool = True,
) -> ReplicaPlan:
    """One replica: the common variables, then the mode's, then the caller's ``extra_env``
    (last, so that an admin's setting such as HYDRA_IFACE=ib0 wins). CUDA_VISIBLE_DEVICES is
    never set here: only the backend knows which physical boards a replica got. The command's
    ``$VARIABLES`` are filled in from the result (see commands.expand_variables)."""
    parameter_server = role == "ps"
    env = {**common_env(request, role, index, host), **env, **request.extra_env}
    return ReplicaPlan(
        role=role,
        index=index,
        hostname=host.hostname,
        address=host.address,
        argv=tuple(expand_variables(argv, env)) if runs_entry else (),
        runs_entry=runs_entry,
        awaited=awaited,
        env=env,
        files=dict(files or {}),
        mounts=tuple(request.mounts),
        # Seed 001 / SPEC L3: a parameter server gets CPU and memory only, from the PS spec.
        cpu_millicores=request.ps_cpu_millicores if parameter_server else request.cpu_millicores,
        memory_mib=request.ps_memory_mib if parameter_server else request.memory_mib,
        boards=0.0 if parameter_server else request.boards,
    )
