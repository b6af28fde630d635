"""Seeds 001 and 002, a peer's view of a distributed launch: TensorFlow's TF_CONFIG on the
parameter-server and worker peers, and the MPI variables each peer of an MPI job gets."""

from __future__ import annotations

import json

import pytest

from jobs.launch import plan, port_for
from tests.jobs.launch_helpers import make


class TestSeed001TensorFlow:
    # Seed 001's distributed start command, which a user may type as their run command.
    SEED_COMMAND = (
        'python --task_index "$VC_TASK_INDEX" --ps_hosts "$TF_PS_HOSTS" '
        '--worker_hosts "$TF_WORKER_HOSTS" --job_name "$MA_TASK_NAME" '
        "/workspace/algorithm/train.py --epochs 5"
    )

    def test_seed_variables_and_its_command(self):
        port = port_for(42)
        launch = plan(make("tensorflow", self.SEED_COMMAND, ps_count=2, port=port))
        ps_hosts = f"demo-ps-0:{port},demo-ps-1:{port}"
        worker_hosts = f"demo-worker-0:{port},demo-worker-1:{port}"
        ps1 = launch.replica("ps", 1)
        assert ps1.env["TF_PS_HOSTS"] == ps_hosts
        assert ps1.env["TF_WORKER_HOSTS"] == worker_hosts
        assert ps1.env["VC_TASK_INDEX"] == "1"
        assert ps1.env["MA_TASK_NAME"] == "ps"
        assert list(ps1.argv) == [
            "python",
            "--task_index",
            "1",
            "--ps_hosts",
            ps_hosts,
            "--worker_hosts",
            worker_hosts,
            "--job_name",
            "ps",
            "/workspace/algorithm/train.py",
            "--epochs",
            "5",
        ]
        assert launch.replica("worker", 0).argv[2] == "0"

    def test_ports_come_from_5000_to_10000(self):
        assert all(5000 <= port_for(job_id) <= 10000 for job_id in range(20000))
        port = port_for(123456)
        launch = plan(make("tensorflow", ps_count=1, port=port))
        cluster = json.loads(launch.replicas[0].env["TF_CONFIG"])["cluster"]
        assert {address.rsplit(":", 1)[1] for group in cluster.values() for address in group} == {
            str(port)
        }

    def test_the_ps_gets_cpu_and_memory_only(self):
        # Seed 001's 8-board, 72-core, 512 GB spec: the PS gets no boards. Its CPU and memory
        # come from the admin PS spec (SPEC J15), and the worker keeps the spec it asked for.
        launch = plan(
            make(
                "tensorflow",
                node_count=1,
                boards=8,
                cpu_millicores=72000,
                memory_mib=512 * 1024,
                ps_count=1,
                ps_cpu_millicores=1000,
                ps_memory_mib=1024,
            )
        )
        ps, worker = launch.replica("ps", 0), launch.replica("worker", 0)
        assert (ps.cpu_millicores, ps.memory_mib, ps.boards) == (1000, 1024, 0)
        assert (worker.cpu_millicores, worker.memory_mib, worker.boards) == (72000, 524288, 8)
        assert (ps.awaited, worker.awaited) == (False, True)


class TestSeed002Mpi:
    def test_variables_of_a_gpu_job(self):
        # The seed's hostfile example: 2 workers, 2 processes each.
        launch = plan(make("mpi", boards=2))
        assert launch.replicas[0].files["/etc/mpi/hostfile"] == (
            "demo-worker-0 slots=2\ndemo-worker-1 slots=2\n"
        )
        for prefix in ("CONSOLE_", "MLP_"):
            expected = {
                f"{prefix}WORKER_NUM": "2",
                f"{prefix}WORKER_GPU": "2",
                f"{prefix}MPI_HOSTS": "demo-worker-0:2,demo-worker-1:2",
                f"{prefix}MPI_HOSTFILE": "/etc/mpi/hostfile",
                f"{prefix}MPI_NP": "4",
                f"{prefix}WORKER_0_HOST": "demo-worker-0",
            }
            for replica in launch.replicas:
                assert expected.items() <= replica.env.items()

    def test_variables_of_a_cpu_job(self):
        env = plan(make("mpi", boards=0, node_count=3)).replicas[0].env
        assert env["MLP_MPI_HOSTS"] == "demo-worker-0:1,demo-worker-1:1,demo-worker-2:1"
        assert env["MLP_MPI_NP"] == env["MLP_WORKER_NUM"] == "3"
        assert env["MLP_WORKER_GPU"] == "0"

    @pytest.mark.parametrize(
        ("command", "expected"),
        [
            (
                "horovodrun -np $MLP_MPI_NP -H $MLP_MPI_HOSTS python /workspace/algorithm/train.py",
                "horovodrun -np 4 -H demo-worker-0:2,demo-worker-1:2 "
                "python /workspace/algorithm/train.py",
            ),
            (
                "horovodrun -np $MLP_MPI_NP -hostfile $MLP_MPI_HOSTFILE "
                "python /workspace/algorithm/train.py",
                "horovodrun -np 4 -hostfile /etc/mpi/hostfile python /workspace/algorithm/train.py",
            ),
            (
                "deepspeed --hostfile $MLP_MPI_HOSTFILE --master_addr ${MLP_WORKER_0_HOST} "
                "--force_multi /workspace/algorithm/train.py",
                "deepspeed --hostfile /etc/mpi/hostfile --master_addr demo-worker-0 "
                "--force_multi /workspace/algorithm/train.py",
            ),
        ],
    )
    def test_the_seed_launch_commands_run_on_worker_0_unwrapped(self, command, expected):
        launch = plan(make("mpi", command, boards=2))
        assert launch.replicas[0].display_command() == expected
        assert [r.runs_entry for r in launch.replicas] == [True, False]

    def test_deepspeed_single_machine_with_the_hostfile(self):
        command = "deepspeed --hostfile=$MLP_MPI_HOSTFILE /workspace/algorithm/train.py"
        (replica,) = plan(make("deepspeed", command, node_count=1)).replicas
        assert replica.argv[1] == "--hostfile=/job/hostfile"
        assert replica.files["/job/hostfile"] == "demo-worker-0 slots=4\n"
