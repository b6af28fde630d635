"""L5 PyTorch-DeepSpeed: the PyTorch variables, seed 002's MPI-style variables, and the
hostfile at /job/hostfile, where the ``deepspeed`` launcher looks by default (seed 000).

The ``deepspeed`` launcher reaches every host of the hostfile from one node (over ssh, as
mpirun does), so when the command uses it only worker 0 runs it and the others stay up as
its peers; running it on every node would start the training once per node. Any other
command (``torchrun ...`` with the variables) runs on every node, as in PyTorch mode.
"""

from __future__ import annotations

from jobs.launch.commands import command_words, split_command
from jobs.launch.common import mpi_style_env, openmpi_hostfile, replica, torch_env, worker_hosts
from jobs.launch.request import LaunchRequest
from jobs.launch.types import ReplicaPlan

HOSTFILE = "/job/hostfile"
LAUNCHER = "deepspeed"


def build(request: LaunchRequest) -> tuple[ReplicaPlan, ...]:
    workers = worker_hosts(request)
    master = workers[0]
    argv = split_command(request.command)
    fans_out = LAUNCHER in command_words(request.command)
    files = {HOSTFILE: openmpi_hostfile(workers, request.slots)}
    mpi_env = mpi_style_env(request, workers, HOSTFILE)
    replicas = []
    for rank, host in enumerate(workers):
        runs = rank == 0 or not fans_out
        replicas.append(
            replica(
                request,
                role="worker",
                index=rank,
                host=host,
                argv=argv,
                env={**torch_env(request, rank, master), **mpi_env},
                files=files,
                runs_entry=runs,
                awaited=runs,
            )
        )
    return tuple(replicas)
