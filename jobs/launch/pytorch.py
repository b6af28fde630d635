"""L4 PyTorch: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK and SLOTS on every node, and a
single-node ``python ...`` command wrapped in ``torch.distributed.launch`` (seed 000).

A command not starting with python/python3 (``torchrun ...``, ``bash -c ...``) or already
naming torch.distributed.launch/run is taken to be distributed already: it runs as typed.
"""

from __future__ import annotations

import re

from jobs.launch.commands import split_command
from jobs.launch.common import Host, master_addr, replica, torch_env, worker_hosts
from jobs.launch.request import LaunchRequest
from jobs.launch.types import ReplicaPlan

# python, python3, python3.12, also by path (/opt/conda/bin/python): what a user means by
# "starts with python".
PYTHON = re.compile(r"python(3(\.\d+)?)?")
ALREADY_DISTRIBUTED = ("torch.distributed.launch", "torch.distributed.run")
LAUNCHER_MODULE = "torch.distributed.launch"


def _split_interpreter(argv: list[str]) -> tuple[list[str], bool, list[str]] | None:
    """(interpreter options, runs a module?, script or module and its arguments), or None
    when there is no script to wrap (``python -c ...``, ``python --version``, ``python``).

    Interpreter options (``python -u train.py``) must stay before ``-m <launcher>``, or the
    launcher would take them for its own.
    """
    options: list[str] = []
    position = 1
    while position < len(argv):
        arg = argv[position]
        if arg == "-m":
            rest = argv[position + 1 :]
            return (options, True, rest) if rest else None
        if arg in ("-W", "-X"):
            options += argv[position : position + 2]
            position += 2
        elif arg.startswith(("-W", "-X")):
            options.append(arg)
            position += 1
        elif arg == "-" or arg.startswith("--"):
            return None
        elif arg.startswith("-"):
            if "c" in arg or "m" in arg:
                return None  # -c CODE, or a cluster such as -um that we do not untangle
            options.append(arg)
            position += 1
        else:
            return options, False, argv[position:]
    return None


def entry_argv(request: LaunchRequest, rank: int, master: Host) -> list[str]:
    argv = split_command(request.command)
    program = argv[0].rsplit("/", 1)[-1]
    if not PYTHON.fullmatch(program) or any(n in request.command for n in ALREADY_DISTRIBUTED):
        return argv
    parts = _split_interpreter(argv)
    if parts is None:
        return argv
    options, module, target = parts
    return [
        argv[0],
        *options,
        "-m",
        LAUNCHER_MODULE,
        f"--nproc_per_node={request.slots}",
        f"--nnodes={request.node_count}",
        f"--node_rank={rank}",
        f"--master_addr={master_addr(rank, master)}",
        f"--master_port={request.port}",
        *(["-m"] if module else []),
        *target,
    ]


def build(request: LaunchRequest) -> tuple[ReplicaPlan, ...]:
    workers = worker_hosts(request)
    master = workers[0]
    return tuple(
        replica(
            request,
            role="worker",
            index=rank,
            host=host,
            argv=entry_argv(request, rank, master),
            env=torch_env(request, rank, master),
        )
        for rank, host in enumerate(workers)
    )
