"""Every mode at every size: replicas, names, resources, files, variables and commands."""

from __future__ import annotations

import itertools
import json
from dataclasses import FrozenInstanceError, dataclass

import pytest

from jobs.launch import MODES, LaunchRequest, plan, port_for, slots_for
from jobs.launch.commands import split_command
from jobs.launch.mpi import mpirun_prefix

NODE_COUNTS = (1, 2, 3, 8)
BOARDS = (0, 0.5, 1, 4, 8)
PS_COUNTS = (0, 1, 2)
TRAIN = "python /workspace/algorithm/train.py --epochs 5"


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    read_only: bool = False


def make(mode: str, command: str = TRAIN, **overrides) -> LaunchRequest:
    fields = {
        "job_name": "resnet",
        "mode": mode,
        "command": command,
        "cpu_millicores": 4000,
        "memory_mib": 16384,
        "port": 6000,
    }
    fields.update(overrides)
    return LaunchRequest(**fields)


def sizes():
    for mode, nodes, boards, ps in itertools.product(MODES, NODE_COUNTS, BOARDS, PS_COUNTS):
        if (mode == "single" and nodes != 1) or (mode != "tensorflow" and ps):
            continue
        yield pytest.param(mode, nodes, boards, ps, id=f"{mode}-{nodes}n-{boards}b-{ps}ps")


@pytest.mark.parametrize(("mode", "nodes", "boards", "ps"), list(sizes()))
def test_every_mode_and_size(mode, nodes, boards, ps):
    mounts = (Mount("/storage/data", "/workspace/dataset/private/data", True),)
    request = make(mode, node_count=nodes, boards=boards, ps_count=ps, mounts=mounts)
    slots = slots_for(boards)
    launch = plan(request)

    workers = [r for r in launch.replicas if r.role == "worker"]
    servers = [r for r in launch.replicas if r.role == "ps"]
    assert [r.index for r in workers] == list(range(nodes))
    assert [r.index for r in servers] == list(range(ps))
    assert launch.replicas == (*workers, *servers)  # workers first, then parameter servers
    assert [r.hostname for r in workers] == [f"resnet-worker-{i}" for i in range(nodes)]
    assert [r.hostname for r in servers] == [f"resnet-ps-{i}" for i in range(ps)]

    for replica in workers:
        assert (replica.cpu_millicores, replica.memory_mib, replica.boards) == (4000, 16384, boards)
    for replica in servers:
        assert (replica.cpu_millicores, replica.memory_mib, replica.boards) == (1000, 1024, 0)
    for replica in launch.replicas:
        assert replica.mounts == mounts
        assert replica.env["CONSOLE_JOB_NAME"] == "resnet"
        assert replica.env["CONSOLE_MODE"] == mode
        assert replica.env["CONSOLE_REPLICA_ROLE"] == replica.role
        assert replica.env["CONSOLE_REPLICA_INDEX"] == str(replica.index)
        assert replica.env["CONSOLE_REPLICA_HOST"] == replica.hostname
        assert replica.env["CONSOLE_WORKER_NUM"] == str(nodes)
        assert replica.env["CONSOLE_OUTPUT_DIR"] == "/workspace/outputs"
        assert "CUDA_VISIBLE_DEVICES" not in replica.env
        assert all(isinstance(v, str) for v in replica.env.values())

    hosts = [f"resnet-worker-{i}" for i in range(nodes)]
    if mode == "single":
        assert workers[0].argv == tuple(split_command(TRAIN))
        assert workers[0].files == {}
    elif mode == "mpi":
        hostfile = "".join(f"{h} slots={slots}\n" for h in hosts)
        assert all(r.files["/etc/mpi/hostfile"] == hostfile for r in workers)
        assert all(r.env["MLP_MPI_NP"] == str(nodes * slots) for r in workers)
        assert workers[0].argv[:4] == ("mpirun", "--allow-run-as-root", "-np", str(nodes * slots))
        assert workers[0].argv[-4:] == tuple(split_command(TRAIN))
        assert [r.runs_entry for r in workers] == [True] + [False] * (nodes - 1)
    elif mode == "tensorflow":
        for replica in launch.replicas:
            config = json.loads(replica.env["TF_CONFIG"])
            assert config["task"] == {"type": replica.role, "index": replica.index}
            assert config["cluster"]["worker"] == [f"{h}:6000" for h in hosts]
            assert config["cluster"].get("ps", []) == [f"resnet-ps-{i}:6000" for i in range(ps)]
            assert replica.argv == tuple(split_command(TRAIN))
        assert [r.awaited for r in launch.replicas] == [True] * nodes + [False] * ps
    elif mode == "pytorch":
        for rank, replica in enumerate(workers):
            assert replica.env["RANK"] == str(rank)
            assert replica.env["WORLD_SIZE"] == str(nodes)
            assert replica.env["SLOTS"] == str(slots)
            assert replica.env["MASTER_ADDR"] == ("localhost" if rank == 0 else hosts[0])
            assert replica.argv[1:3] == ("-m", "torch.distributed.launch")
            assert f"--node_rank={rank}" in replica.argv
            assert f"--nproc_per_node={slots}" in replica.argv
            assert f"--nnodes={nodes}" in replica.argv
            assert replica.argv[-3:] == ("/workspace/algorithm/train.py", "--epochs", "5")
    elif mode == "deepspeed":
        hostfile = "".join(f"{h} slots={slots}\n" for h in hosts)
        assert all(r.files == {"/job/hostfile": hostfile} for r in workers)
        assert all(r.env["MLP_MPI_HOSTFILE"] == "/job/hostfile" for r in workers)
        assert [r.env["RANK"] for r in workers] == [str(i) for i in range(nodes)]
        # Not the deepspeed launcher: every node runs it.
        assert all(r.runs_entry for r in workers)


@pytest.mark.parametrize("nodes", NODE_COUNTS)
def test_deepspeed_launcher_runs_on_worker_0_only(nodes):
    launch = plan(make("deepspeed", "deepspeed train.py --deepspeed", node_count=nodes, boards=8))
    assert [r.runs_entry for r in launch.replicas] == [True] + [False] * (nodes - 1)
    assert launch.wait_for_peers is (nodes > 1)


# What worker 1 of a 2-node x 2-board job puts between the interpreter and the script.
LAUNCH = [
    "-m",
    "torch.distributed.launch",
    "--nproc_per_node=2",
    "--nnodes=2",
    "--node_rank=1",
    "--master_addr=resnet-worker-0",
    "--master_port=6000",
]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python train.py", ["python", *LAUNCH, "train.py"]),
        ("python3 train.py --lr 0.1", ["python3", *LAUNCH, "train.py", "--lr", "0.1"]),
        ("python3.12 train.py", ["python3.12", *LAUNCH, "train.py"]),
        ("/opt/conda/bin/python t.py", ["/opt/conda/bin/python", *LAUNCH, "t.py"]),
        # Interpreter options stay the interpreter's.
        ("python -u train.py", ["python", "-u", *LAUNCH, "train.py"]),
        ("python -W ignore t.py", ["python", "-W", "ignore", *LAUNCH, "t.py"]),
        ("python -Wignore -OO t.py", ["python", "-Wignore", "-OO", *LAUNCH, "t.py"]),
        # A module is run as a module by the launcher.
        ("python -m pkg.train --x 1", ["python", *LAUNCH, "-m", "pkg.train", "--x", "1"]),
        ("python train.py --rank $RANK", ["python", *LAUNCH, "train.py", "--rank", "1"]),
    ],
)
def test_pytorch_wraps_python_commands(command, expected):
    worker = plan(make("pytorch", command, node_count=2, boards=2)).replicas[1]
    assert list(worker.argv) == expected


@pytest.mark.parametrize(
    "command",
    [
        "torchrun --nproc_per_node 4 train.py",
        "python -m torch.distributed.run --nproc_per_node=4 train.py",
        "python -m torch.distributed.launch train.py",
        'bash -c "python train.py"',
        "python -c 'import train'",
        "python --version",
        "python",
        "python -um pkg",
        "accelerate launch train.py",
    ],
)
def test_pytorch_runs_other_commands_as_typed(command):
    for replica in plan(make("pytorch", command, node_count=2)).replicas:
        assert list(replica.argv) == split_command(command)


@pytest.mark.parametrize(
    ("command", "wrapped"),
    [
        ("python train.py", True),
        ("python train.py --deepspeed --deepspeed_config ds.json", True),
        ("bash run.sh", True),
        ("mpirun -np 2 python train.py", False),
        ("/usr/local/bin/mpirun python train.py", False),
        ('bash -c "cd /workspace/algorithm && mpirun python train.py"', False),
        ("bash -lc 'source env.sh; mpiexec -n 8 python train.py'", False),
        ("horovodrun -np 8 python train.py", False),
        ("deepspeed train.py", False),
        ("env NCCL_DEBUG=WARN deepspeed train.py", False),
        # Seed 000's rule is literal: a command containing "mpirun" is the user's own.
        ("python mpirun_helper.py", False),
    ],
)
def test_mpi_prefixes_only_commands_that_do_not_launch(command, wrapped):
    argv = list(plan(make("mpi", command, node_count=2, boards=1)).replicas[0].argv)
    prefix = mpirun_prefix(2) if wrapped else []
    assert argv == [*prefix, *split_command(command)]


def test_subdomain_addresses_peers_but_not_own_hostname():
    launch = plan(make("tensorflow", node_count=2, ps_count=1, subdomain="resnet"))
    worker0 = launch.replica("worker", 0)
    assert worker0.hostname == "resnet-worker-0"
    assert worker0.address == "resnet-worker-0.resnet"
    cluster = json.loads(worker0.env["TF_CONFIG"])["cluster"]
    assert cluster["ps"] == ["resnet-ps-0.resnet:6000"]
    mpi = plan(make("mpi", node_count=2, boards=1, subdomain="resnet")).replicas[0]
    assert mpi.files["/etc/mpi/hostfile"].splitlines()[1] == "resnet-worker-1.resnet slots=1"
    torch = plan(make("pytorch", node_count=2, subdomain="resnet")).replicas[1]
    assert torch.env["MASTER_ADDR"] == "resnet-worker-0.resnet"


def test_extra_env_comes_last():
    extra = {"HYDRA_IFACE": "ib0", "NCCL_IB_HCA": "mlx5", "CUDA_VISIBLE_DEVICES": "3"}
    replica = plan(make("mpi", node_count=2, extra_env=extra)).replicas[1]
    assert extra.items() <= replica.env.items()


def test_extra_env_is_copied():
    extra = {"A": "1"}
    request = make("single", extra_env=extra)
    extra["A"] = "2"
    assert plan(request).replicas[0].env["A"] == "1"


def test_plans_are_frozen_and_deterministic():
    request = make("tensorflow", node_count=3, ps_count=2)
    launch = plan(request)
    assert launch == plan(request)
    with pytest.raises(FrozenInstanceError):
        launch.replicas[0].argv = ()
    with pytest.raises(FrozenInstanceError):
        request.node_count = 4


def test_as_dict_is_json_and_summary_names_every_replica():
    launch = plan(make("mpi", node_count=3, boards=0.5, mounts=[Mount("/s", "/workspace/x")]))
    data = json.loads(json.dumps(launch.as_dict()))
    assert [r["hostname"] for r in data["replicas"]] == [r.hostname for r in launch.replicas]
    assert data["replicas"][0]["argv"] == list(launch.replicas[0].argv)
    assert data["replicas"][0]["mounts"] == [
        {"source": "/s", "target": "/workspace/x", "read_only": False}
    ]
    summary = launch.summary()
    assert all(r.address in summary for r in launch.replicas)
    assert "mpirun --allow-run-as-root -np 3" in summary
    assert summary.count("peer") == 2


@pytest.mark.parametrize(
    ("boards", "slots"), [(0, 1), (0.25, 1), (0.5, 1), (1, 1), (1.5, 2), (2, 2), (8, 8)]
)
def test_slots_follow_boards(boards, slots):
    assert slots_for(boards) == slots
    assert make("mpi", boards=boards).slots == slots


def test_slots_may_be_given():
    request = make("mpi", node_count=2, boards=0, slots=4)
    assert plan(request).replicas[0].argv[3] == "8"


@pytest.mark.parametrize(
    ("job_id", "port"), [(0, 5000), (1, 5001), (5000, 10000), (5001, 5000), (12345, 7343)]
)
def test_port_for(job_id, port):
    assert port_for(job_id) == port


def test_port_for_refuses_negative_ids():
    with pytest.raises(ValueError, match="negative"):
        port_for(-1)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"job_name": "Resnet"}, "DNS label"),
        ({"job_name": "-resnet"}, "DNS label"),
        ({"job_name": "a" * 64}, "DNS label"),
        ({"job_name": ""}, "DNS label"),
        ({"mode": "horovod"}, "mode"),
        ({"command": "   "}, "empty"),
        ({"node_count": 0}, "node count"),
        ({"mode": "single", "node_count": 2}, "exactly one node"),
        ({"boards": -1}, "boards"),
        ({"boards": float("nan")}, "boards"),
        ({"slots": -1}, "slots"),
        ({"cpu_millicores": 0}, "CPU"),
        ({"memory_mib": 0}, "memory"),
        ({"mode": "pytorch", "ps_count": 1}, "TensorFlow"),
        ({"mode": "tensorflow", "ps_count": -1}, "negative"),
        ({"mode": "tensorflow", "ps_count": 1, "ps_memory_mib": 0}, "parameter server"),
        ({"port": 0}, "TCP port"),
        ({"port": 65536}, "TCP port"),
        ({"output_subdir": "a/b"}, "folder"),
        ({"output_subdir": ".."}, "folder"),
        ({"subdomain": "Not_A_Label"}, "subdomain"),
        ({"extra_env": {"1X": "a"}}, "variable name"),
        ({"extra_env": {"X": 1}}, "string"),
        ({"mounts": ["/data"]}, "not a mount"),
        ({"mounts": [Mount("/s", "relative")]}, "absolute"),
    ],
)
def test_bad_requests_are_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        make(**{"mode": "mpi", **overrides})


def test_a_command_a_shell_could_not_split_is_refused():
    with pytest.raises(ValueError, match="cannot be split"):
        plan(make("single", "python train.py --name 'unclosed"))


def test_hostnames_must_fit_a_dns_label():
    name = "a" * 54  # "-worker-9" fits, "-worker-10" does not
    assert plan(make("mpi", job_name=name, node_count=10)).replicas[9].hostname == (
        f"{name}-worker-9"
    )
    with pytest.raises(ValueError, match="longer than 63"):
        plan(make("mpi", job_name=name, node_count=11))
