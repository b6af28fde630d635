"""The programs shipped in resources/samples, and the tests' checker, run for real.

tests/checkers/check_env.py runs with this interpreter against the environments the launch
plans give (jobs.launch), hostfiles written where the local backend would put them. train.py
runs with the PyTorch runtime (made once per machine under var/, reused by later runs;
skipped with the reason when this machine cannot have it): alone, resumed, as a 2-node DDP
job, stopped. The TensorFlow sample's ``own_ports`` is imported by the TensorFlow runtime's
Python.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.launch import LaunchRequest, plan
from resources import samples
from tests.checkers import CHECK_ENV

PERFORMANCE_LINE = re.compile(
    r"^this iteration hardware time is \d+\.\d{3} and e2e time is \d+\.\d{3} ms\.$", re.M
)


# --- check_env.py ------------------------------------------------------------------------


def check_env(env, *args, python=sys.executable):
    argv = [python, str(CHECK_ENV), *args]
    full_env = {"PATH": os.environ.get("PATH", ""), **env}
    return subprocess.run(argv, env=full_env, capture_output=True, text=True, timeout=60)


def replica_envs(tmp_path, mode, **fields):
    """Each replica's environment, its files written under ``tmp_path/<replica>`` and every
    variable naming one pointed there, as the local backend does."""
    request = LaunchRequest(job_name="job", mode=mode, command="python check_env.py",
                            cpu_millicores=1000, memory_mib=1024, port=5123, **fields)  # fmt: skip
    envs = []
    for replica in plan(request).replicas:
        env = dict(replica.env)
        for path, text in replica.files.items():
            local = tmp_path / replica.hostname / path.lstrip("/")
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_text(text)
            env = {name: value.replace(path, str(local)) for name, value in env.items()}
        envs.append(env)
    return envs


@pytest.mark.parametrize(
    ("mode", "fields", "args"),
    [
        ("pytorch", {"node_count": 2}, ["--nodes", "2"]),
        ("deepspeed", {"node_count": 3, "boards": 2}, ["--nodes", "3"]),
        ("tensorflow", {"node_count": 2, "ps_count": 1}, ["--nodes", "2", "--ps", "1"]),
        ("tensorflow", {"node_count": 3}, ["--nodes", "3", "--ps", "0"]),
        ("mpi", {"node_count": 2, "boards": 4}, ["--nodes", "2"]),
    ],
)
def test_every_replica_of_a_plan_passes(tmp_path, mode, fields, args):
    for env in replica_envs(tmp_path, mode, **fields):
        done = check_env(env, "--mode", mode, *args)
        assert done.returncode == 0, done.stderr
        assert re.search(rf"check_env: {mode}: all \d+ checks passed", done.stdout)


def test_pytorch_under_the_launcher(tmp_path):
    env = replica_envs(tmp_path, "pytorch", node_count=2, boards=2)[1]
    # torch.distributed.launch: per-process values, LOCAL_RANK, and --local-rank appended.
    env.update(WORLD_SIZE="4", RANK="3", LOCAL_RANK="1")
    assert check_env(env, "--mode", "pytorch", "--nodes", "2", "--local-rank=1").returncode == 0


def test_the_local_backends_single_hostfile_line(tmp_path):
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("localhost slots=8\n")
    env = replica_envs(tmp_path, "deepspeed", node_count=2, boards=4)[0]
    env["CONSOLE_MPI_HOSTFILE"] = str(hostfile)
    assert check_env(env, "--mode", "deepspeed", "--nodes", "2").returncode == 0


@pytest.mark.parametrize(
    ("mode", "change", "problem"),
    [
        ("pytorch", {"RANK": "2"}, "RANK='2' is not a whole number >= 0 and < 2"),
        ("pytorch", {"MASTER_ADDR": ""}, "MASTER_ADDR is not set"),
        ("pytorch", {"MASTER_PORT": "http"}, "MASTER_PORT='http'"),
        ("deepspeed", {"CONSOLE_MPI_HOSTFILE": "/nowhere/hostfile"}, "no hostfile at"),
        ("deepspeed", {"CONSOLE_MPI_NP": "5"}, "has 4 slots but CONSOLE_MPI_NP is 5"),
        ("tensorflow", {"TF_CONFIG": "{not json"}, "TF_CONFIG is not JSON"),
        ("tensorflow", {"VK_TASK_INDEX": "1"}, "VK_TASK_INDEX='1' but TF_CONFIG's task says '0'"),
        ("tensorflow", {"TF_CONFIG": '{"cluster": {"worker": ["a:1"]}, '
                                     '"task": {"type": "worker", "index": 1}}'},
         "is not in the cluster"),
        ("mpi", {"HYDRA_IFACE": ""}, "HYDRA_IFACE is not set"),
    ],
)  # fmt: skip
def test_a_wrong_environment_exits_3_and_says_why(tmp_path, mode, change, problem):
    fields = {"node_count": 2, "boards": 2} if mode != "tensorflow" else {"node_count": 2}
    env = {**replica_envs(tmp_path, mode, **fields)[0], **change}
    done = check_env(env, "--mode", mode)
    assert done.returncode == 3
    assert problem in done.stderr


def test_the_deepspeed_hostfile_must_be_host_slots_lines(tmp_path):
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("job-worker-0:1\njob-worker-1:1\n")
    env = replica_envs(tmp_path, "deepspeed", node_count=2)[0]
    done = check_env({**env, "CONSOLE_MPI_HOSTFILE": str(hostfile)}, "--mode", "deepspeed")
    assert done.returncode == 3 and "is not made of 'host slots=N' lines" in done.stderr


def test_without_the_variables_deepspeed_looks_at_job_hostfile():
    done = check_env({}, "--mode", "deepspeed")
    assert done.returncode == 3 and "/job/hostfile" in done.stderr


# --- train.py ----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def torch_python(torch_runtime):
    return str(torch_runtime / "bin" / "python")


def train_env(python, tmp=None):
    # Nothing of ours leaks in (CONSOLE_OUTPUT_DIR would move the checkpoints); temporary
    # files (torch's launcher makes a folder per run) stay in the test's own folder.
    env = {"PATH": f"{Path(python).parent}:/usr/bin:/bin", "LANG": "C.UTF-8"}
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    return env


def train(python, cwd, *args, timeout=120):
    argv = [python, str(samples.TRAIN_SCRIPT), *args]
    done = subprocess.run(argv, cwd=cwd, env=train_env(python, cwd), capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def checkpoints(folder):
    return sorted(p.name for p in (folder / "outputs").glob("checkpoint-*.pt"))


def test_train_alone_then_resume(torch_python, tmp_path):
    first = train(torch_python, tmp_path, "--steps", "4")
    # Paths as the job knows them: absolute, under its working folder (/workspace in a job).
    here = tmp_path.resolve()
    assert f"no checkpoint in {here}/outputs: starting from step 0" in first
    assert len(PERFORMANCE_LINE.findall(first)) == 4
    assert checkpoints(tmp_path) == ["checkpoint-4.pt"]
    second = train(torch_python, tmp_path, "--steps", "6", "--output", "outputs")
    assert f"resumed from {here}/outputs/checkpoint-4.pt (step 4)" in second
    assert "step 5/6" in second and "step 4/6" not in second
    assert len(PERFORMANCE_LINE.findall(second)) == 2
    assert checkpoints(tmp_path) == ["checkpoint-4.pt", "checkpoint-6.pt"]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_two_nodes_with_torch_distributed_launch(torch_python, tmp_path):
    port = free_port()
    nodes = []
    for rank in (0, 1):
        argv = [torch_python, "-m", "torch.distributed.launch", "--nproc_per_node=1",
                "--nnodes=2", f"--node_rank={rank}", "--master_addr=127.0.0.1",
                f"--master_port={port}", str(samples.TRAIN_SCRIPT), "--steps", "3"]  # fmt: skip
        nodes.append(subprocess.Popen(argv, cwd=tmp_path, env=train_env(torch_python, tmp_path),
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))  # fmt: skip
    try:
        logs = [node.communicate(timeout=180)[0] for node in nodes]
    finally:
        for node in nodes:
            node.kill()
    assert [node.returncode for node in nodes] == [0, 0], logs
    for log in logs:
        assert "training: 2 process(es)" in log
        assert len(PERFORMANCE_LINE.findall(log)) == 3
    assert (
        f"saved {tmp_path.resolve()}/outputs/checkpoint-3.pt" in logs[0] and "saved" not in logs[1]
    )
    assert checkpoints(tmp_path) == ["checkpoint-3.pt"]


def test_sigterm_saves_a_checkpoint_and_stops(torch_python, tmp_path):
    argv = [torch_python, str(samples.TRAIN_SCRIPT), "--steps", "500", "--sleep", "0.1"]
    run = subprocess.Popen(argv, cwd=tmp_path, env=train_env(torch_python, tmp_path),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        for line in run.stdout:
            if line.startswith("step 2/"):
                break
        run.send_signal(signal.SIGTERM)
        rest = run.communicate(timeout=60)[0]
    finally:
        run.kill()
    assert run.returncode == 128 + signal.SIGTERM
    step = int(re.search(r"stopped by SIGTERM at step (\d+)", rest).group(1))
    assert f"checkpoint-{step}.pt" in checkpoints(tmp_path)
    assert f"resumed from {tmp_path.resolve()}/outputs/checkpoint-{step}.pt" in train(
        torch_python, tmp_path, "--steps", str(step + 1)
    )


def test_a_diverging_run_fails(torch_python, tmp_path):
    # The demo job "bad-lr" (--lr 10) is the one that ends with exit code 1.
    argv = [torch_python, str(samples.TRAIN_SCRIPT), "--lr", "10"]
    done = subprocess.run(argv, cwd=tmp_path, env=train_env(torch_python, tmp_path),
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 1
    assert "diverged (is --lr too high?)" in done.stderr


# --- tf_sample: own_ports ----------------------------------------------------------------

# The sample's module, imported by the TensorFlow runtime's Python (it imports TensorFlow);
# the configs in on stdin, the rewritten ones out as JSON.
OWN_PORTS = """
import json, sys
sys.dont_write_bytecode = True  # nothing left in the sample's folder
sys.path.insert(0, sys.argv[1])
from train import own_ports
configs = json.load(sys.stdin)
given = json.dumps(configs)
rewritten = [own_ports(config) for config in configs]
assert json.dumps(configs) == given, "own_ports changed the config it was given"
print(json.dumps(rewritten))
"""


@pytest.fixture(scope="session")
def tf_python(runtime_folder):
    return str(runtime_folder("tensorflow-cpu") / "bin" / "python")


def own_ports(python, configs):
    argv = [python, "-c", OWN_PORTS, str(samples.TF_SAMPLE)]
    done = subprocess.run(argv, input=json.dumps(configs), env=train_env(python),
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def tf_config(cluster, role, index):
    return {"cluster": cluster, "task": {"type": role, "index": index}}


def test_own_ports_gives_every_loopback_task_its_own_port(tf_python, tmp_path):
    # As the local backend gives them: one loopback address per replica, one port for all.
    one_ps = {"ps": ["127.0.1.3:5123"], "worker": ["127.0.1.1:5123", "127.0.1.2:5123"]}
    two_ps = {**one_ps, "ps": ["127.0.1.3:5123", "127.0.1.4:5123"]}
    allreduce = {"worker": one_ps["worker"]}
    tasks = [("worker", 0), ("worker", 1), ("ps", 0)]
    # A real cluster: the plan's own TF_CONFIG, host names (other machines) throughout.
    planned = [
        json.loads(env["TF_CONFIG"])
        for env in replica_envs(tmp_path, "tensorflow", node_count=2, ps_count=1)
    ]
    alone = tf_config({"worker": ["127.0.1.1:5123"]}, "worker", 0)
    configs = [
        *(tf_config(one_ps, role, index) for role, index in tasks),
        tf_config(two_ps, "ps", 1),
        tf_config(allreduce, "worker", 1),
        *planned,
        alone,
    ]
    rewritten = own_ports(tf_python, configs)

    # Workers first (the port + i), then the parameter servers (+ workers + j); every task
    # rewrites the same, so they agree; its own task is kept.
    expected = {"ps": ["127.0.1.3:5125"], "worker": ["127.0.1.1:5123", "127.0.1.2:5124"]}
    for (role, index), config in zip(tasks, rewritten[:3], strict=True):
        assert config == tf_config(expected, role, index)
    assert rewritten[3]["cluster"] == {
        "ps": ["127.0.1.3:5125", "127.0.1.4:5126"],
        "worker": ["127.0.1.1:5123", "127.0.1.2:5124"],
    }
    # AllReduce: the workers only, as before, and no "ps" appears.
    assert rewritten[4] == tf_config({"worker": expected["worker"]}, "worker", 1)
    # Other hosts, or a task alone: nothing changes.
    assert planned and all("127." not in json.dumps(config) for config in planned)
    assert rewritten[5:] == [*planned, alone]
