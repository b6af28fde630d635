"""L2 Horovod/MPI: hostfiles for OpenMPI and MPICH, the seed's mpirun prefix, and seed 002's
variables. Only worker 0 runs the entry command; mpirun starts the processes on the other
workers, which therefore run nothing themselves and stay up as its peers."""

from __future__ import annotations

from jobs.launch.commands import command_words, split_command
from jobs.launch.common import (
    mpi_style_env,
    mpich_hostfile,
    openmpi_hostfile,
    replica,
    worker_hosts,
)
from jobs.launch.request import LaunchRequest
from jobs.launch.types import ReplicaPlan

HOSTFILE = "/etc/mpi/hostfile"
MPICH_HOSTFILE = "/etc/mpi/mpich_hostfile"
HYDRA_IFACE = "eth0"

# A command that already starts its processes across the hosts must not be wrapped again:
# seed 000 names mpirun; mpiexec (MPICH), horovodrun and deepspeed (seed 002's MPI examples)
# launch onto the hostfile the same way, and wrapping them would start each np times.
LAUNCHERS = frozenset(
    {"mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prterun", "horovodrun", "deepspeed"}
)


# Seed 000's prefix (OpenMPI only), but for --bind-to and --map-by, which it writes with one
# dash: Open MPI 5 takes "-bind-to" for an option it does not know and "none" for the program
# to run, while Open MPI 4 reads the two-dash forms too. No -hostfile: mpirun reads
# OMPI_MCA_orte_default_hostfile (Open MPI 4) or PRTE_MCA_prte_default_hostfile (5).
MPIRUN_PREFIX = (
    "mpirun --allow-run-as-root -np {np} --bind-to none --map-by slot"
    " -x NCCL_DEBUG=INFO -x LD_LIBRARY_PATH -x PATH -mca pml ob1 -mca btl ^openib"
)


def mpirun_prefix(process_count: int) -> list[str]:
    return MPIRUN_PREFIX.format(np=process_count).split()


def launches_itself(command: str) -> bool:
    # Seed 000's rule is literal ("contains mpirun"), so it also covers bash -c "... mpirun".
    return "mpirun" in command or bool(command_words(command) & LAUNCHERS)


def entry_argv(request: LaunchRequest) -> list[str]:
    argv = split_command(request.command)
    if launches_itself(request.command):
        return argv
    return [*mpirun_prefix(request.process_count), *argv]


def build(request: LaunchRequest) -> tuple[ReplicaPlan, ...]:
    workers = worker_hosts(request)
    files = {
        HOSTFILE: openmpi_hostfile(workers, request.slots),
        MPICH_HOSTFILE: mpich_hostfile(workers, request.slots),
    }
    env = {
        "OMPI_MCA_orte_default_hostfile": HOSTFILE,
        # OpenMPI 5 replaced ORTE with PRRTE, which reads its own name for the same setting.
        "PRTE_MCA_prte_default_hostfile": HOSTFILE,
        "HYDRA_HOST_FILE": MPICH_HOSTFILE,
        "HYDRA_IFACE": HYDRA_IFACE,
        # PMIx's shared-memory store (gds shmem2, Open MPI 5) failed to open its file on a
        # loaded machine ("PMIX_ERR_FILE_OPEN_FAILURE") and took the job down; the hash
        # store keeps the same data in each process's memory.
        "PMIX_MCA_gds": "hash",
        **mpi_style_env(request, workers, HOSTFILE),
    }
    argv = entry_argv(request)
    return tuple(
        replica(
            request,
            role="worker",
            index=index,
            host=host,
            argv=argv,
            env=env,
            files=files,
            runs_entry=index == 0,
            awaited=index == 0,  # seed 002: worker 0 exiting 0 is success
        )
        for index, host in enumerate(workers)
    )
