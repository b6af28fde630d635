"""L3 TensorFlow: TF_CONFIG on every replica, PS-worker (``ps_count`` > 0) or AllReduce.

Every replica runs the command as typed; TensorFlow reads TF_CONFIG (seed 000). Seed 001's
variables are set too, for scripts that take ``--ps_hosts``/``--worker_hosts`` flags.
"""

from __future__ import annotations

import json

from jobs.launch.commands import split_command
from jobs.launch.common import hosts, replica, worker_hosts
from jobs.launch.request import LaunchRequest
from jobs.launch.types import ReplicaPlan


def cluster_spec(request: LaunchRequest) -> dict[str, list[str]]:
    """``host:port`` per task. Every replica listens on the job's one port: they are
    different hosts. AllReduce has no "ps" key at all, as in the seed."""
    port = request.port
    cluster = {}
    if request.ps_count:
        ps = hosts(request, "ps", request.ps_count)
        cluster["ps"] = [f"{host.address}:{port}" for host in ps]
    cluster["worker"] = [f"{host.address}:{port}" for host in worker_hosts(request)]
    return cluster


def tf_config(cluster: dict[str, list[str]], role: str, index: int) -> str:
    # The seed quotes its "${VK_TASK_INDEX}" placeholder; TensorFlow's resolvers expect a
    # number, which is what TensorFlow's own documentation shows.
    task = {"type": role, "index": index}
    return json.dumps({"cluster": cluster, "task": task, "environment": "cloud"})


def build(request: LaunchRequest) -> tuple[ReplicaPlan, ...]:
    argv = split_command(request.command)
    cluster = cluster_spec(request)
    shared = {"TF_WORKER_HOSTS": ",".join(cluster["worker"])}
    if "ps" in cluster:
        shared["TF_PS_HOSTS"] = ",".join(cluster["ps"])
    groups = [("worker", worker_hosts(request)), ("ps", hosts(request, "ps", request.ps_count))]
    replicas = []
    for role, group in groups:
        for index, host in enumerate(group):
            env = {
                "TF_CONFIG": tf_config(cluster, role, index),
                **shared,
                "VC_TASK_INDEX": str(index),
                "VK_TASK_INDEX": str(index),
                "MA_TASK_NAME": role,
            }
            # Parameter servers serve until stopped: the workers decide the job's outcome.
            replicas.append(
                replica(
                    request,
                    role=role,
                    index=index,
                    host=host,
                    argv=argv,
                    env=env,
                    awaited=role == "worker",
                )
            )
    return tuple(replicas)
