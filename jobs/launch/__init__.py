"""Launch plans: a job and its placement in, what each replica runs out (SPEC L1-L5).

Pure: plain data in, plain data out; no ORM, no settings, no I/O (the modes and their
rules come from ``console.modes``, which reads neither). The backends execute a plan
as it is, so what the detail page shows is what runs.

Interface
---------
``plan(request: LaunchRequest) -> LaunchPlan``; raises ValueError for a request it cannot
honour (a bad name, size or mount, a command that cannot be split into words).

``LaunchRequest`` (frozen, keyword-only): ``job_name`` (DNS label), ``mode`` (one of
``console.modes.MODES``: single, mpi, tensorflow, pytorch, deepspeed), ``command`` (as typed
and validated by the form), ``cpu_millicores``/``memory_mib``/``boards`` per node
(``boards`` may be a slice, 0.5), ``port`` (use ``port_for(job_id)``: 5000-10000),
``node_count`` (workers, >= 1), ``slots`` (processes per node; 0 = ``slots_for(boards)``:
boards rounded up, 1 for CPU specs), ``ps_count``/``ps_cpu_millicores``/``ps_memory_mib``
(TensorFlow; 0 PS = AllReduce; PS spec default 1000m/1024 MiB), ``mounts`` (objects with
``source``, ``target``, ``read_only``, e.g. ``resources.catalog.mounts.Mount``), ``extra_env`` (str
-> str, applied last), ``output_subdir`` (batch sub-tasks: ``<job>-<index>``; None
otherwise), ``subdomain`` (Kubernetes: the headless Service, so peers use
``<hostname>.<subdomain>``).

``LaunchPlan`` (frozen): ``mode``, ``job_name``, ``replicas`` (workers by index, then
parameter servers), ``summary()``, ``as_dict()``, ``replica(role, index)``,
``wait_for_peers`` (some replica launches onto the others: all must be reachable first).

``ReplicaPlan`` (frozen): ``role`` ("worker" or "ps"), ``index``, ``hostname``
(``<job>-worker-0``, ``<job>-ps-0``), ``address`` (what peers use), ``argv`` (a tuple),
``runs_entry`` (False: empty argv, stay up as a peer), ``awaited`` (the job succeeds when
every awaited replica exits 0; any failure fails it; the rest are then stopped), ``env``,
``files`` (absolute path -> text), ``mounts``, ``cpu_millicores``, ``memory_mib``, ``boards``,
``display_command(width=None)`` (``shlex.join``; with a width, wrapped with `` \\``).

What each mode does (modules of the same name hold the details)
---------------------------------------------------------------
* single: one worker, the command as typed.
* mpi: ``/etc/mpi/hostfile`` (``host slots=N``) and ``/etc/mpi/mpich_hostfile``
  (``host:N``) on every worker, OMPI_MCA_orte_default_hostfile, HYDRA_HOST_FILE,
  HYDRA_IFACE=eth0; the seed's ``mpirun --allow-run-as-root -np <nodes x slots> ...`` prefix
  unless the command already launches (mpirun; also mpiexec, horovodrun, deepspeed); only
  worker 0 runs it and is awaited. Seed 002's variables as ``CONSOLE_*`` and ``MLP_*``:
  WORKER_NUM, WORKER_GPU, MPI_HOSTS, MPI_HOSTFILE, MPI_NP, WORKER_0_HOST.
* tensorflow: TF_CONFIG per replica (ps/worker, or workers only), TF_WORKER_HOSTS,
  TF_PS_HOSTS (PS mode only), VC_TASK_INDEX, VK_TASK_INDEX, MA_TASK_NAME; every replica runs
  the command; PS replicas get the PS spec's CPU and memory, no boards, and are not awaited.
* pytorch: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, SLOTS; ``python ...`` wrapped in
  ``python -m torch.distributed.launch --nproc_per_node --nnodes --node_rank --master_addr
  --master_port``; other commands as typed.
* deepspeed: the PyTorch variables, the seed-002 variables and ``/job/hostfile``; a
  ``deepspeed`` launcher command runs on worker 0 only, any other on every worker.

Every replica gets CONSOLE_JOB_NAME, CONSOLE_MODE, CONSOLE_REPLICA_ROLE,
CONSOLE_REPLICA_INDEX, CONSOLE_REPLICA_HOST, CONSOLE_WORKER_NUM, CONSOLE_OUTPUT_DIR (and
CONSOLE_OUTPUT_SUBDIR for batch sub-tasks). CUDA_VISIBLE_DEVICES is never set here: only the
backend knows the physical boards.

Choices where the documents leave room or disagree
--------------------------------------------------
* Batch outputs: SPEC J3 and seed 000 say the script need not know it is a sub-task, so
  CONSOLE_OUTPUT_DIR is /workspace/outputs for every job and the sub-task's folder is made by
  the outputs mount's source (``resources.catalog.mounts.mount_outputs(path, job_name=, index=)``);
  a plan with ``output_subdir`` refuses an outputs mount that is not that folder.
* Parameter servers get the admin PS spec (SPEC J15, seed 000), not half a worker (seed 001,
  a peer): the worker keeps the spec the user chose.
* PyTorch: WORLD_SIZE is the node count and RANK the node rank (seed 000's torchrun example
  needs it so); the launchers set per-process values for the training processes. The master
  gets MASTER_ADDR=localhost, as in the seed's command.
* TF_CONFIG's task index is a number (the seed's template quotes a placeholder).
* Ports: any TCP port is accepted so the seed's ``--master_port=2222`` example reproduces;
  ``port_for`` keeps real jobs in 5000-10000 (seed 001).
* A command's ``\\``-newline continuations are joined as a shell would (the seeds print long
  commands that way).
* argv is executed without a shell, yet the seeds' commands use the variables
  (``torchrun --nnodes ${WORLD_SIZE}``, ``horovodrun -np $MLP_MPI_NP``): ``$NAME`` and
  ``${NAME}`` of every variable the replica gets are filled in at plan time, so the page
  shows the values that run. Others (``$HOME``) stay for a ``bash -c "..."`` to expand.
* ``display_command`` is ``shlex.join`` except that ``^`` stays unquoted (no POSIX shell
  gives it a meaning), so the seed's ``-mca btl ^openib`` reads as printed.
"""

from __future__ import annotations

from collections.abc import Callable

from console.modes import MODES, Mode
from jobs.launch import deepspeed, mpi, pytorch, single, tensorflow
from jobs.launch.common import check_outputs
from jobs.launch.request import LaunchRequest
from jobs.launch.types import (
    DEFAULT_PS_CPU_MILLICORES,
    DEFAULT_PS_MEMORY_MIB,
    ENV_PREFIX,
    OUTPUTS_DIR,
    PEER_ENV_PREFIX,
    PORT_RANGE,
    LaunchPlan,
    MountLike,
    ReplicaPlan,
    port_for,
    slots_for,
)

__all__ = [
    "DEFAULT_PS_CPU_MILLICORES",
    "DEFAULT_PS_MEMORY_MIB",
    "ENV_PREFIX",
    "MODES",
    "OUTPUTS_DIR",
    "PEER_ENV_PREFIX",
    "PORT_RANGE",
    "LaunchPlan",
    "LaunchRequest",
    "MountLike",
    "ReplicaPlan",
    "plan",
    "port_for",
    "slots_for",
]

# One module per mode (console.modes lists them and holds their rules).
_BUILDERS: dict[str, Callable[[LaunchRequest], tuple[ReplicaPlan, ...]]] = {
    Mode.SINGLE.value: single.build,
    Mode.MPI.value: mpi.build,
    Mode.TENSORFLOW.value: tensorflow.build,
    Mode.PYTORCH.value: pytorch.build,
    Mode.DEEPSPEED.value: deepspeed.build,
}


def plan(request: LaunchRequest) -> LaunchPlan:
    """What every replica of ``request`` runs, with which variables, files and resources."""
    check_outputs(request)
    replicas = _BUILDERS[request.mode](request)
    return LaunchPlan(mode=request.mode, job_name=request.job_name, replicas=replicas)
