"""Properties of every plan, for any mode, size, name, port and typical command."""

from __future__ import annotations

import json
import re
import shlex

from hypothesis import given
from hypothesis import strategies as st

from jobs.launch import MODES, PORT_RANGE, LaunchPlan, LaunchRequest, plan, port_for
from jobs.launch.commands import split_command
from jobs.launch.mpi import launches_itself

COMMANDS = [
    "python /workspace/algorithm/train.py",
    "python3 -u train.py --lr 0.1 --name 'two words'",
    "python -m pkg.train --rank $RANK",
    "torchrun --nnodes ${WORLD_SIZE} --nproc_per_node ${SLOTS} --node_rank ${RANK} train.py",
    'bash -c "python train.py && python evaluate.py"',
    "mpirun -np 4 python train.py",
    "horovodrun -np $MLP_MPI_NP -H $MLP_MPI_HOSTS python train.py",
    "deepspeed train.py --deepspeed --deepspeed_config ds.json",
    'python train.py --tf "$TF_CONFIG"',
]
BOARDS = [0, 0.25, 0.5, 1, 2, 3, 4, 8, 16]
LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")

names = st.from_regex(r"[a-z]([-a-z0-9]{0,30}[a-z0-9])?", fullmatch=True)


@st.composite
def requests(draw) -> LaunchRequest:
    mode = draw(st.sampled_from(MODES))
    return LaunchRequest(
        job_name=draw(names),
        mode=mode,
        command=draw(st.sampled_from(COMMANDS)),
        cpu_millicores=draw(st.integers(1, 256_000)),
        memory_mib=draw(st.integers(1, 2_048_000)),
        port=port_for(draw(st.integers(0, 2**40))),
        node_count=1 if mode == "single" else draw(st.integers(1, 16)),
        boards=draw(st.sampled_from(BOARDS)),
        ps_count=draw(st.integers(0, 4)) if mode == "tensorflow" else 0,
        ps_cpu_millicores=draw(st.integers(1, 8000)),
        ps_memory_mib=draw(st.integers(1, 16384)),
        subdomain=draw(st.sampled_from(("", "svc"))),
    )


def workers(launch: LaunchPlan):
    return [r for r in launch.replicas if r.role == "worker"]


@given(requests())
def test_one_replica_per_node_plus_parameter_servers(request):
    launch = plan(request)
    assert len(workers(launch)) == request.node_count
    assert len(launch.replicas) == request.node_count + request.ps_count
    assert {r.role for r in launch.replicas} <= {"worker", "ps"}
    for role in ("worker", "ps"):
        indexes = [r.index for r in launch.replicas if r.role == role]
        assert indexes == list(range(len(indexes)))


@given(requests())
def test_hostnames_are_unique_dns_labels(request):
    launch = plan(request)
    hostnames = [r.hostname for r in launch.replicas]
    assert len(set(hostnames)) == len(hostnames)
    assert len({r.address for r in launch.replicas}) == len(hostnames)
    for replica in launch.replicas:
        assert LABEL.fullmatch(replica.hostname)
        assert replica.hostname.startswith(f"{request.job_name}-{replica.role}-")
        assert replica.address.split(".")[0] == replica.hostname


@given(requests())
def test_variables_are_strings_and_never_pick_boards(request):
    for replica in plan(request).replicas:
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in replica.env.items())
        assert "CUDA_VISIBLE_DEVICES" not in replica.env
        assert replica.env["CONSOLE_REPLICA_ROLE"] == replica.role
        assert replica.env["CONSOLE_REPLICA_INDEX"] == str(replica.index)
        # Every variable the command names and the replica has is filled in.
        for word in replica.argv:
            assert not any(name in replica.env for name in VARIABLE.findall(word))


@given(requests())
def test_resources(request):
    for replica in plan(request).replicas:
        if replica.role == "ps":
            assert (replica.cpu_millicores, replica.memory_mib, replica.boards) == (
                request.ps_cpu_millicores,
                request.ps_memory_mib,
                0,
            )
        else:
            assert (replica.cpu_millicores, replica.memory_mib, replica.boards) == (
                request.cpu_millicores,
                request.memory_mib,
                request.boards,
            )


@given(requests())
def test_who_runs_the_entry_command(request):
    launch = plan(request)
    for replica in launch.replicas:
        assert replica.runs_entry == bool(replica.argv)
        assert replica.awaited <= replica.runs_entry  # only what runs can be awaited
    assert any(r.awaited for r in launch.replicas)
    if request.mode == "mpi" or (
        request.mode == "deepspeed" and request.command.startswith("deepspeed")
    ):
        assert [r.runs_entry for r in launch.replicas] == [True] + [False] * (
            request.node_count - 1
        )
        assert [r.awaited for r in launch.replicas] == [r.runs_entry for r in launch.replicas]
    else:
        assert all(r.runs_entry for r in launch.replicas)
        assert all(r.awaited == (r.role == "worker") for r in launch.replicas)


@given(requests())
def test_mpi_np_is_nodes_times_slots(request):
    if request.mode != "mpi":
        return
    worker0 = plan(request).replicas[0]
    np = str(request.node_count * request.slots)
    assert worker0.env["MLP_MPI_NP"] == worker0.env["CONSOLE_MPI_NP"] == np
    hostfile = worker0.files["/etc/mpi/hostfile"].splitlines()
    assert len(hostfile) == request.node_count
    assert all(line.endswith(f" slots={request.slots}") for line in hostfile)
    if launches_itself(request.command):
        assert list(worker0.argv[:2]) == split_command(request.command)[:2]
    else:
        assert worker0.argv[worker0.argv.index("-np") + 1] == np


@given(requests())
def test_tf_config_is_consistent(request):
    if request.mode != "tensorflow":
        return
    launch = plan(request)
    low, high = PORT_RANGE
    for replica in launch.replicas:
        config = json.loads(replica.env["TF_CONFIG"])
        assert config["environment"] == "cloud"
        assert config["task"] == {"type": replica.role, "index": replica.index}
        cluster = config["cluster"]
        assert ("ps" in cluster) == (request.ps_count > 0)
        for role, addresses in cluster.items():
            expected = [r.address for r in launch.replicas if r.role == role]
            assert [a.rsplit(":", 1)[0] for a in addresses] == expected
            assert all(low <= int(a.rsplit(":", 1)[1]) <= high for a in addresses)


@given(requests())
def test_pytorch_ranks_cover_the_nodes(request):
    if request.mode not in ("pytorch", "deepspeed"):
        return
    launch = plan(request)
    assert sorted(int(r.env["RANK"]) for r in launch.replicas) == list(range(request.node_count))
    low, high = PORT_RANGE
    master = launch.replicas[0].address
    for replica in launch.replicas:
        assert replica.env["WORLD_SIZE"] == str(request.node_count)
        assert replica.env["SLOTS"] == str(request.slots)
        assert low <= int(replica.env["MASTER_PORT"]) <= high
        assert replica.env["MASTER_ADDR"] == ("localhost" if replica.index == 0 else master)
        if "torch.distributed.launch" in replica.argv:
            assert f"--node_rank={replica.env['RANK']}" in replica.argv


@given(requests(), st.integers(20, 120))
def test_display_pastes_back_into_the_same_words(request, width):
    for replica in plan(request).replicas:
        assert shlex.split(replica.display_command()) == list(replica.argv)
        wrapped = replica.display_command(width)
        assert shlex.split(wrapped.replace("\\\n", "")) == list(replica.argv)


@given(requests())
def test_plans_are_json_ready_and_deterministic(request):
    launch = plan(request)
    assert launch == plan(request)
    assert json.loads(json.dumps(launch.as_dict())) == launch.as_dict()
    assert launch.summary().count("\n") >= len(launch.replicas)


@given(st.integers(0, 2**63))
def test_port_for_stays_in_range(job_id):
    low, high = PORT_RANGE
    assert low <= port_for(job_id) <= high
    assert port_for(job_id) == port_for(job_id)


@given(
    st.sampled_from(MODES),
    st.text(alphabet=st.sampled_from(list("ab -'\"\\$&|;(){}\n=mpirun")), min_size=1),
)
def test_any_command_gives_a_plan_or_a_value_error(mode, command):
    try:
        request = LaunchRequest(
            job_name="job", mode=mode, command=command, cpu_millicores=1, memory_mib=1, port=5000
        )
        plan(request)
    except ValueError:
        pass
