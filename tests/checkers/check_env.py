"""Check, from inside a job, the environment the console gives a framework; standard library
only, so it runs with any Python 3.8+.

    python check_env.py --mode tensorflow|deepspeed|pytorch|mpi [--nodes N] [--ps N]
                        [--hostfile PATH]

Prints each check; exits 0 when all hold, 3 (with one plain line per problem) when one does
not, 2 for bad options. What is expected comes from the launch plans (jobs/launch/):

* pytorch: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK (0 <= RANK < WORLD_SIZE), SLOTS. A
  ``python ...`` command runs under torch.distributed.launch, which passes --local-rank and
  makes WORLD_SIZE/RANK per process: with LOCAL_RANK set, WORLD_SIZE is nodes x SLOTS.
* deepspeed: the PyTorch variables and the hostfile at /job/hostfile (jobs/launch/deepspeed.py;
  its path is also in CONSOLE_MPI_HOSTFILE, which the local backend points at the replica's
  own copy) with ``host slots=N`` lines.
* tensorflow: TF_CONFIG with "cluster" and "task", the task's type and index in the cluster
  and equal to VK_TASK_INDEX, VC_TASK_INDEX, MA_TASK_NAME and CONSOLE_REPLICA_INDEX/ROLE.
* mpi: OMPI_MCA_orte_default_hostfile (``host slots=N``), HYDRA_HOST_FILE (``host:N``),
  HYDRA_IFACE, slots adding up to CONSOLE_MPI_NP.

A hostfile may be one ``localhost slots=<all>`` line: the local backend's form when one
launcher starts every process on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

DEEPSPEED_HOSTFILE = "/job/hostfile"  # jobs/launch/deepspeed.py HOSTFILE
OPENMPI_LINE = re.compile(r"(\S+)\s+slots=(\d+)")
MPICH_LINE = re.compile(r"([^\s:]+):(\d+)")
PROBLEM_EXIT_CODE = 3


class Checks:
    def __init__(self, mode):
        self.mode = mode
        self.problems = []
        self.passed = 0

    def check(self, holds, ok, problem):
        if holds:
            self.passed += 1
            print(f"ok: {ok}", flush=True)
        else:
            self.problems.append(problem)
            print(f"problem: {problem}", file=sys.stderr, flush=True)
        return holds

    def integer(self, name, low, high=None):
        """The variable as an int in [low, high), or None after recording why not."""
        value = os.environ.get(name)
        if not self.check(value is not None, f"{name} is set", f"{name} is not set"):
            return None
        try:
            number = int(value)
        except ValueError:
            number = None
        fits = number is not None and number >= low and (high is None or number < high)
        limits = f">= {low}" + (f" and < {high}" if high is not None else "")
        self.check(fits, f"{name}={value}", f"{name}={value!r} is not a whole number {limits}")
        return number if fits else None


def expected_np():
    value = os.environ.get("CONSOLE_MPI_NP") or os.environ.get("MLP_MPI_NP")
    return int(value) if value and value.isdigit() else None


def check_hostfile(checks, path, line_pattern, form, nodes):
    """``path`` exists and every line is ``form``; slots add up to CONSOLE_MPI_NP and, unless
    it is the single localhost line, there is one line per node."""
    exists = bool(path) and os.path.isfile(path)
    if not checks.check(exists, f"hostfile {path} exists", f"no hostfile at {path!r}"):
        return
    with open(path, encoding="utf-8") as handle:
        lines = [line.strip() for line in handle if line.strip() and not line.startswith("#")]
    matches = [line_pattern.fullmatch(line) for line in lines]
    well_formed = bool(lines) and all(matches)
    shown = " | ".join(lines)
    if not checks.check(
        well_formed,
        f"{path} lines are '{form}': {shown}",
        f"{path} is not made of '{form}' lines: {shown!r}",
    ):
        return
    total = sum(int(m.group(2)) for m in matches)
    wanted = expected_np()
    if wanted is not None:
        checks.check(
            total == wanted,
            f"{total} slots = CONSOLE_MPI_NP",
            f"{path} has {total} slots but CONSOLE_MPI_NP is {wanted}",
        )
    collapsed = len(matches) == 1 and matches[0].group(1) == "localhost"
    if nodes is not None and not collapsed:
        checks.check(
            len(lines) == nodes,
            f"{nodes} hosts in {path}",
            f"{path} lists {len(lines)} hosts, not {nodes}",
        )


def check_pytorch(checks, args):
    addr = os.environ.get("MASTER_ADDR", "")
    checks.check(bool(addr), f"MASTER_ADDR={addr}", "MASTER_ADDR is not set")
    checks.integer("MASTER_PORT", 1, 65536)
    world = checks.integer("WORLD_SIZE", 1)
    if world is not None:
        checks.integer("RANK", 0, world)
    slots = checks.integer("SLOTS", 1) if "SLOTS" in os.environ else 1
    if args.nodes is not None and world is not None and slots is not None:
        launched = "LOCAL_RANK" in os.environ  # per-process values from a launcher
        wanted = args.nodes * slots if launched else args.nodes
        what = "nodes x SLOTS (under a launcher)" if launched else "the node count"
        checks.check(
            world == wanted,
            f"WORLD_SIZE is {what}: {wanted}",
            f"WORLD_SIZE is {world}, {what} is {wanted}",
        )


def check_deepspeed(checks, args):
    check_pytorch(checks, args)
    path = (
        args.hostfile
        or os.environ.get("CONSOLE_MPI_HOSTFILE")
        or os.environ.get("MLP_MPI_HOSTFILE")
        or DEEPSPEED_HOSTFILE
    )
    check_hostfile(checks, path, OPENMPI_LINE, "host slots=N", args.nodes)


def check_tensorflow(checks, args):
    raw = os.environ.get("TF_CONFIG")
    if not checks.check(raw is not None, "TF_CONFIG is set", "TF_CONFIG is not set"):
        return
    try:
        config = json.loads(raw)
    except ValueError:
        config = None
    cluster = config.get("cluster") if isinstance(config, dict) else None
    task = config.get("task") if isinstance(config, dict) else None
    shaped = (
        isinstance(cluster, dict)
        and isinstance(task, dict)
        and all(isinstance(hosts, list) and hosts for hosts in cluster.values())
    )
    if not checks.check(
        shaped,
        f"TF_CONFIG has cluster and task: {raw}",
        f"TF_CONFIG is not JSON with 'cluster' and 'task': {raw!r}",
    ):
        return
    role, index = task.get("type"), str(task.get("index", ""))
    known = role in cluster and index.isdigit() and int(index) < len(cluster[role])
    if not checks.check(
        known,
        f"task {role} {index} is in the cluster",
        f"task {role!r} {index!r} is not in the cluster {cluster}",
    ):
        return
    for name, value in (
        ("VK_TASK_INDEX", index),
        ("VC_TASK_INDEX", index),
        ("CONSOLE_REPLICA_INDEX", index),
        ("MA_TASK_NAME", role),
        ("CONSOLE_REPLICA_ROLE", role),
    ):
        if name in os.environ:
            checks.check(
                os.environ[name] == value,
                f"{name}={value} matches the task",
                f"{name}={os.environ[name]!r} but TF_CONFIG's task says {value!r}",
            )
    if "TF_WORKER_HOSTS" in os.environ:
        joined = ",".join(cluster.get("worker", []))
        checks.check(
            os.environ["TF_WORKER_HOSTS"] == joined,
            "TF_WORKER_HOSTS matches",
            f"TF_WORKER_HOSTS={os.environ['TF_WORKER_HOSTS']!r}, cluster: {joined!r}",
        )
    for role_name, wanted in (("worker", args.nodes), ("ps", args.ps)):
        if wanted is not None:
            count = len(cluster.get(role_name, []))
            checks.check(
                count == wanted,
                f"{role_name} tasks: {wanted}",
                f"{role_name} tasks in the cluster: {count}, not {wanted}",
            )


def check_mpi(checks, args):
    # OpenMPI's own name, lower case and all (seed 000).
    path = args.hostfile or os.environ.get("OMPI_MCA_orte_default_hostfile", "")  # noqa: SIM112
    check_hostfile(checks, path, OPENMPI_LINE, "host slots=N", args.nodes)
    check_hostfile(checks, os.environ.get("HYDRA_HOST_FILE", ""), MPICH_LINE, "host:N", args.nodes)
    iface = os.environ.get("HYDRA_IFACE", "")
    checks.check(bool(iface), f"HYDRA_IFACE={iface}", "HYDRA_IFACE is not set")
    size, wanted = os.environ.get("OMPI_COMM_WORLD_SIZE"), expected_np()
    if size is not None and wanted is not None:  # started by mpirun
        checks.check(
            size == str(wanted),
            f"mpirun started {size} processes",
            f"mpirun started {size} processes, CONSOLE_MPI_NP is {wanted}",
        )


MODES = {
    "pytorch": check_pytorch,
    "deepspeed": check_deepspeed,
    "tensorflow": check_tensorflow,
    "mpi": check_mpi,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description="Check a job's framework environment.")
    parser.add_argument("--mode", required=True, choices=sorted(MODES))
    parser.add_argument("--nodes", type=int, help="expected number of nodes (workers)")
    parser.add_argument("--ps", type=int, help="expected parameter servers (tensorflow)")
    parser.add_argument("--hostfile", help="hostfile to read instead of the mode's own")
    # torch.distributed.launch appends this when it runs us in PyTorch mode.
    parser.add_argument("--local-rank", "--local_rank", type=int, default=None)
    args = parser.parse_args(argv)
    checks = Checks(args.mode)
    MODES[args.mode](checks, args)
    if checks.problems:
        print(
            f"check_env: {args.mode}: problems: " + "; ".join(checks.problems),
            file=sys.stderr,
            flush=True,
        )
        return PROBLEM_EXIT_CODE
    print(f"check_env: {args.mode}: all {checks.passed} checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
