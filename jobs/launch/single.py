"""L1 single node: the command as typed, on one worker."""

from __future__ import annotations

from jobs.launch.commands import split_command
from jobs.launch.common import replica, worker_hosts
from jobs.launch.request import LaunchRequest
from jobs.launch.types import ReplicaPlan


def build(request: LaunchRequest) -> tuple[ReplicaPlan, ...]:
    (host,) = worker_hosts(request)  # LaunchRequest refuses single mode on several nodes
    argv = split_command(request.command)
    return (replica(request, role="worker", index=0, host=host, argv=argv, env={}),)
