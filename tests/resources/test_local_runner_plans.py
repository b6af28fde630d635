"""The local runner with what jobs bring: SPEC W mounts (read-only ones really read-only),
launch plans of jobs.launch (MPI under mpirun, PyTorch across two nodes), peers that never
come up (seed 002), and recovery after the supervising process died."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from jobs.launch import LaunchRequest, plan, port_for
from resources.backends.base import ReplicaSpec, Workload, WorkloadState
from resources.backends.local import host
from resources.backends.local.runner import PROJECT_ROOT
from tests.helpers import wait_until
from tests.resources.test_local_runner_helpers import (
    Mounted,
    replica,
    running,
    workload_from_plan,
)

AS_ROOT = os.geteuid() == 0


@pytest.fixture
def runs(tmp_path):
    with running(tmp_path) as runs:
        yield runs


WRITER = """
import json, os, sys
def attempt(path, mode="w"):
    try:
        with open(path, mode) as handle:
            handle.write("from the job\\n")
        return "written"
    except OSError as error:
        return type(error).__name__
# Relative to the working directory, /workspace: a path inside a program's own source is
# not rewritten (only argv, environment and the plan's files are).
result = {
    "new in data": attempt("dataset/private/cifar/new.txt"),
    "old in data": attempt("dataset/private/cifar/labels.txt", "a"),
    "volume": attempt("volume/scratch/notes.txt"),
    "outputs": attempt(os.path.join(sys.argv[1], "model.bin")),
    "algorithm": attempt("algorithm/extra.py"),
}
print(json.dumps(result, sort_keys=True))
"""


@pytest.mark.skipif(not AS_ROOT, reason="read-only mounts are enforced by running jobs as "
                    "another user, which only root can do")  # fmt: skip
def test_read_only_mounts_cannot_be_written(runs):
    data = runs.folder("datasets/cifar")
    (data / "labels.txt").write_text("cat\n")
    volume, outputs = runs.folder("volumes/scratch"), runs.folder("outputs/job")
    runs.program("write.py", WRITER)
    mounts = (
        (str(runs.storage / "algorithm"), "/workspace/algorithm", True),
        (str(data), "/workspace/dataset/private/cifar", True),
        (str(volume), "/workspace/volume/scratch", False),
        (str(outputs), "/workspace/outputs", False),
    )
    argv = ("python3", "/workspace/algorithm/write.py", "/workspace/outputs")
    runs.runner.submit(Workload(id="rw-1", replicas=(replica("rw-worker-0", argv, mounts=mounts),)))
    assert runs.wait("rw-1").state == WorkloadState.SUCCEEDED, runs.log("rw-1", "rw-worker-0")
    assert json.loads(runs.log("rw-1", "rw-worker-0")) == {
        "algorithm": "PermissionError",
        "new in data": "PermissionError",
        "old in data": "PermissionError",
        "outputs": "written",
        "volume": "written",
    }
    assert (data / "labels.txt").read_text() == "cat\n"
    assert not (data / "new.txt").exists()
    assert (volume / "notes.txt").read_text() == "from the job\n"

    # What one job wrote into a writable volume is not writable for the next job that
    # mounts the volume read-only, although the same user runs both.
    appender = ("python3", "-c", "open('/workspace/volume/scratch/notes.txt', 'a').write('x')")
    # (in argv, so /workspace is rewritten)
    read_only = ((str(volume), "/workspace/volume/scratch", True),)
    runs.runner.submit(
        Workload(id="rw-2", replicas=(replica("rw-worker-0", appender, mounts=read_only),))
    )
    status = runs.wait("rw-2")
    assert status.state == WorkloadState.FAILED
    assert "PermissionError" in runs.log("rw-2", "rw-worker-0")
    assert (volume / "notes.txt").read_text() == "from the job\n"


RANK = """
import os, socket
rank = os.environ["OMPI_COMM_WORLD_RANK"]
hostfile = open(os.environ["OMPI_MCA_orte_default_hostfile"]).read().strip()
size, np = os.environ["OMPI_COMM_WORLD_SIZE"], os.environ["MLP_MPI_NP"]
# One write per line: both ranks share the log.
os.write(1, f"rank {rank} of {size} np {np} hostfile {hostfile!r}\\n".encode())
with open(os.path.join(os.environ["CONSOLE_OUTPUT_DIR"], f"rank-{rank}.txt"), "w") as out:
    out.write(os.environ["CONSOLE_REPLICA_HOST"])
"""


def test_mpi_plan_runs_every_rank_under_mpirun(runs, mpi_runtime, monkeypatch):
    # The PyTorch runtime's Open MPI, as an MPI job's image puts it first on PATH.
    monkeypatch.setenv("PATH", f"{mpi_runtime / 'bin'}:{os.environ['PATH']}")
    runs.program("rank.py", RANK)
    outputs = runs.folder("outputs/mpi")
    mpi = plan(
        LaunchRequest(
            job_name="mpi-demo",
            mode="mpi",
            command="python3 /workspace/algorithm/rank.py",
            cpu_millicores=1000,
            memory_mib=512,
            port=port_for(7),
            node_count=2,
            mounts=(
                Mounted(str(runs.storage / "algorithm"), "/workspace/algorithm", True),
                Mounted(str(outputs), "/workspace/outputs", False),
            ),
        )
    )
    assert mpi.wait_for_peers and mpi.replicas[0].argv[0] == "mpirun"
    runs.runner.submit(workload_from_plan(mpi, "mpi-demo-1"))
    status = runs.wait("mpi-demo-1", timeout=30)
    entry = runs.log("mpi-demo-1", "mpi-demo-worker-0")
    assert status.state == WorkloadState.SUCCEEDED, entry
    # Both ranks ran in worker 0 (the hostfile says localhost with every slot); worker 1
    # was the peer mpirun would have used, up until the job ended.
    assert "rank 0 of 2 np 2 hostfile 'localhost slots=2'" in entry
    assert "rank 1 of 2 np 2 hostfile 'localhost slots=2'" in entry
    assert sorted(p.name for p in outputs.iterdir()) == ["rank-0.txt", "rank-1.txt"]
    assert [(r.name, r.state) for r in status.replicas] == [
        ("mpi-demo-worker-0", "succeeded"),
        ("mpi-demo-worker-1", "stopped"),
    ]
    assert "peer of the entry replica" in runs.log("mpi-demo-1", "mpi-demo-worker-1")
    assert runs.nothing_left("mpi-demo-1")


MASTER = """#!/usr/bin/env python3
import os, socket, sys, time
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
print("MASTER_ADDR", addr, "RANK", rank, "WORLD_SIZE", world, flush=True)
if rank == 0:
    server = socket.create_server((addr, port))
    for _ in range(world - 1):
        connection, _ = server.accept()
        print("master met rank", connection.recv(10).decode(), flush=True)
        connection.close()
else:
    deadline = time.monotonic() + 15
    while True:
        try:
            with socket.create_connection((addr, port), timeout=1) as connection:
                connection.sendall(str(rank).encode())
            break
        except OSError:
            if time.monotonic() > deadline:
                sys.exit("the master is not reachable")
            time.sleep(0.05)
    print("reached the master", flush=True)
"""


def test_pytorch_plan_finds_its_master(runs):
    runs.program("check.py", MASTER)
    torch = plan(
        LaunchRequest(
            job_name="torch-demo",
            mode="pytorch",
            # Not "python3 ...": that would be wrapped in torch.distributed.launch.
            command="/workspace/algorithm/check.py",
            cpu_millicores=1000,
            memory_mib=512,
            port=port_for(11),
            node_count=2,
            mounts=(Mounted(str(runs.storage / "algorithm"), "/workspace/algorithm", True),),
        )
    )
    assert not torch.wait_for_peers
    runs.runner.submit(workload_from_plan(torch, "torch-demo-1"))
    status = runs.wait("torch-demo-1", timeout=30)
    master = runs.log("torch-demo-1", "torch-demo-worker-0")
    worker = runs.log("torch-demo-1", "torch-demo-worker-1")
    assert status.state == WorkloadState.SUCCEEDED, (master, worker)
    assert "master met rank 1" in master and "reached the master" in worker
    # Rank 0 was told "localhost", rank 1 the master's name: both mean worker 0's address.
    addresses = {log.split()[1] for log in (master, worker)}
    assert len(addresses) == 1 and addresses.pop().startswith("127.")


def test_entry_never_starts_when_peers_stay_unreachable(runs):
    # A peer with a program of its own must listen on CONSOLE_PEER_PORT; this one never does.
    replicas = (
        replica("mute-worker-0", ("sleep", "30")),
        replica("mute-worker-1", ("sleep", "30"), runs_entry=False, awaited=False),
    )
    runs.runner.submit(
        Workload(id="mute-1", replicas=replicas, wait_for_peers=True, peer_timeout_seconds=1)
    )
    status = runs.wait("mute-1", timeout=10)
    assert (status.state, status.reason) == ("failed", "peers not reachable after 1 s: worker 1")
    entry, peer = status.replicas
    assert (entry.state, entry.reason, entry.exit_code) == ("stopped", "never started", None)
    assert peer.state == "stopped"
    assert runs.nothing_left("mute-1")


SUBMITTER = """
import sys, time
from pathlib import Path
from resources.backends.base import ReplicaSpec, Workload
from resources.backends.local.runner import LocalRunner
replicas = tuple(
    ReplicaSpec(name=f"orphan-worker-{i}", role="worker", index=i,
                argv=("bash", "-c", "sleep 60 & sleep 60; wait"))
    for i in range(2)
)
LocalRunner(Path(sys.argv[1])).submit(Workload(id="orphan-1", replicas=replicas))
print("submitted", flush=True)
time.sleep(60)
"""


def test_recover_kills_orphans_of_a_dead_supervisor(runs):
    # A worker submits, then dies: the workload lives on, pollable from any process.
    worker = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SUBMITTER), str(runs.root)],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout.readline() == "submitted\n"
    finally:
        worker.kill()
        worker.wait()
    wait_until(lambda: runs.runner.poll("orphan-1").state == "running", 10, 0.05)
    (found,) = runs.runner.recover()
    assert (found.workload_id, found.status.state, found.killed_processes) == (
        "orphan-1",
        "running",
        0,
    )
    assert len(runs.leftovers("orphan-1")) >= 6

    # Now its supervisor dies too (killed, out of memory): the replicas are orphans.
    supervisor = host.read_json(runs.workload_folder("orphan-1") / "supervisor.json")
    os.kill(supervisor["pid"], signal.SIGKILL)
    wait_until(lambda: not host.is_alive(supervisor), 5, 0.05)
    (found,) = runs.runner.recover()
    assert found.status.state == WorkloadState.FAILED
    assert found.killed_processes >= 6
    assert found.status.reason.startswith("its supervisor ended unexpectedly")
    assert {r.state for r in found.status.replicas} == {"failed"}
    assert runs.nothing_left("orphan-1")
    assert runs.runner.poll("orphan-1").state == WorkloadState.FAILED
    (again,) = runs.runner.recover()  # nothing more to do
    assert again.killed_processes == 0


def test_stop_without_a_supervisor_still_ends_everything(runs):
    runs.runner.submit(Workload(id="lone-1", replicas=(replica("lone-worker-0", ("sleep", "60")),)))
    wait_until(lambda: runs.runner.poll("lone-1").state == "running", 10, 0.05)
    supervisor = host.read_json(runs.workload_folder("lone-1") / "supervisor.json")
    os.kill(supervisor["pid"], signal.SIGKILL)
    wait_until(lambda: not host.is_alive(supervisor), 5, 0.05)
    runs.runner.stop("lone-1", 30)
    status = runs.runner.poll("lone-1")
    assert (status.state, status.reason) == ("stopped", "stopped on request")
    assert runs.nothing_left("lone-1")


def test_workload_id_and_folder_may_differ(runs):
    spec = ReplicaSpec(name="named-worker-0", role="worker", index=0, argv=("true",))
    workload = Workload(id="named-3-2", replicas=(spec,), workdir_name="named-3")
    runs.runner.submit(workload)
    assert runs.wait("named-3-2").state == WorkloadState.SUCCEEDED
    assert (runs.root / "named-3" / "named-worker-0" / "log.txt").exists()
    runs.runner.cleanup("named-3-2")
    assert list(runs.root.iterdir()) == []
