"""Golden tests: every launch example of the seed documents, reproduced with our hostnames.

Seed 000 is the product document (Horovod/MPI, TensorFlow, PyTorch, DeepSpeed, single node),
seed 001 the TensorFlow PS/worker peer, seed 002 the MPI peer. Where a seed shows a
placeholder (``server1``, ``${PS_HOST}``, ``${master address}``) our stable hostname
``demo-worker-0`` etc. takes its place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from jobs.launch import plan
from jobs.launch.commands import split_command
from tests.jobs.launch_helpers import make


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    read_only: bool = False


def one_line(seed_text: str) -> str:
    """A seed's multi-line command as one line (its `` \\`` continuations joined)."""
    return " ".join(split_command(seed_text))


# --- seed 000: Horovod / MPI ----------------------------------------------------------------


class TestSeed000Horovod:
    def test_openmpi_hostfile_of_a_2_node_4_board_job(self):
        for replica in plan(make("mpi")).replicas:
            # seed: "server1 slots=4 server2 slots=4"
            assert replica.files["/etc/mpi/hostfile"] == (
                "demo-worker-0 slots=4\ndemo-worker-1 slots=4\n"
            )
            assert replica.env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"

    def test_cpu_spec_has_one_slot_per_node(self):
        replica = plan(make("mpi", boards=0)).replicas[0]
        hostfile = replica.files["/etc/mpi/hostfile"]
        assert hostfile == "demo-worker-0 slots=1\ndemo-worker-1 slots=1\n"
        assert replica.files["/etc/mpi/mpich_hostfile"] == "demo-worker-0:1\ndemo-worker-1:1\n"

    def test_mpich_hostfile_and_hydra_variables(self):
        for replica in plan(make("mpi")).replicas:
            # seed: "server1:4 server2:4"
            assert replica.files["/etc/mpi/mpich_hostfile"] == "demo-worker-0:4\ndemo-worker-1:4\n"
            assert replica.env["HYDRA_HOST_FILE"] == "/etc/mpi/mpich_hostfile"
            assert replica.env["HYDRA_IFACE"] == "eth0"

    # The seed prints the result with /workspace/test/train.py although the user typed
    # /workspace/algorithm/train.py: a slip of the document; the command is kept as typed.
    # Its "-bind-to none -map-by slot" is written with two dashes, which Open MPI 5 needs
    # (it takes "none" for the program otherwise) and Open MPI 4 reads too.
    SEED_4X4 = """mpirun \\
--allow-run-as-root \\
-np 16 \\
--bind-to none --map-by slot \\
-x NCCL_DEBUG=INFO -x LD_LIBRARY_PATH -x PATH \\
-mca pml ob1 -mca btl ^openib \\
python /workspace/algorithm/train.py"""

    def test_a_4_node_4_board_job_gets_the_mpirun_prefix(self):
        worker0 = plan(make("mpi", node_count=4, boards=4)).replicas[0]
        assert list(worker0.argv) == split_command(self.SEED_4X4)
        assert worker0.display_command() == (
            "mpirun --allow-run-as-root -np 16 --bind-to none --map-by slot -x NCCL_DEBUG=INFO "
            "-x LD_LIBRARY_PATH -x PATH -mca pml ob1 -mca btl ^openib "
            "python /workspace/algorithm/train.py"
        )
        assert worker0.display_command() == one_line(self.SEED_4X4)

    SEED_USER_MPIRUN = """mpirun -np 16 \\
-bind-to none -map-by slot \\
-x NCCL_DEBUG=INFO -x LD_LIBRARY_PATH -x PATH \\
-x NCCL_SOCKET_IFNAME=^lo,docker0 \\
-mca pml ob1 -mca btl ^openib \\
-mca btl_tcp_if_exclude lo,docker0 \\
python /workspace/algorithm/train.py"""

    def test_a_command_with_mpirun_is_left_alone(self):
        launch = plan(make("mpi", self.SEED_USER_MPIRUN, node_count=4, boards=4))
        worker0 = launch.replicas[0]
        assert list(worker0.argv) == split_command(self.SEED_USER_MPIRUN)
        assert worker0.display_command() == one_line(self.SEED_USER_MPIRUN)
        # "no need for -H or -hostfile": the hostfile variables do that.
        assert "-hostfile" not in worker0.argv
        assert "-H" not in worker0.argv
        assert worker0.env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"

    def test_only_worker_0_runs_the_entry_command(self):
        launch = plan(make("mpi", node_count=4))
        assert [r.runs_entry for r in launch.replicas] == [True, False, False, False]
        assert [r.argv for r in launch.replicas[1:]] == [(), (), ()]
        assert [r.awaited for r in launch.replicas] == [True, False, False, False]
        assert launch.wait_for_peers


# --- seed 000: TensorFlow -------------------------------------------------------------------


class TestSeed000TensorFlow:
    def test_ps_worker_tf_config_shapes(self):
        launch = plan(make("tensorflow", node_count=1, ps_count=1, port=5042))
        ps = json.loads(launch.replica("ps", 0).env["TF_CONFIG"])
        worker = json.loads(launch.replica("worker", 0).env["TF_CONFIG"])
        cluster = {"ps": ["demo-ps-0:5042"], "worker": ["demo-worker-0:5042"]}
        assert ps == {
            "cluster": cluster,
            "task": {"type": "ps", "index": 0},
            "environment": "cloud",
        }
        assert worker == {
            "cluster": cluster,
            "task": {"type": "worker", "index": 0},
            "environment": "cloud",
        }
        # Same key order as the seed prints.
        assert list(ps) == ["cluster", "task", "environment"]
        assert list(ps["cluster"]) == ["ps", "worker"]

    def test_allreduce_tf_config_has_workers_only(self):
        launch = plan(make("tensorflow", node_count=2, ps_count=0, port=5042))
        for index, replica in enumerate(launch.replicas):
            assert json.loads(replica.env["TF_CONFIG"]) == {
                "cluster": {"worker": ["demo-worker-0:5042", "demo-worker-1:5042"]},
                "task": {"type": "worker", "index": index},
                "environment": "cloud",
            }
            assert "TF_PS_HOSTS" not in replica.env

    def test_every_node_runs_the_command_as_typed(self):
        launch = plan(make("tensorflow", node_count=2, ps_count=1))
        assert {r.argv for r in launch.replicas} == {("python", "/workspace/algorithm/train.py")}


# --- seed 001: TensorFlow on the PS/worker peer -----------------------------------------------


# --- seed 000: PyTorch ----------------------------------------------------------------------


class TestSeed000PyTorch:
    SEED_MASTER = """python \\
-m torch.distributed.launch \\
--nproc_per_node=4 --nnodes=2 \\
--node_rank=0 \\
--master_addr=localhost --master_port=2222 \\
/workspace/algorithm/train.py"""
    SEED_WORKER = """python \\
-m torch.distributed.launch \\
--nproc_per_node=4 --nnodes=2 \\
--node_rank=1 \\
--master_addr=${master address} --master_port=2222 \\
/workspace/algorithm/train.py""".replace("${master address}", "demo-worker-0")

    def test_a_2_node_4_board_job_is_wrapped(self):
        master, worker = plan(make("pytorch")).replicas
        assert list(master.argv) == split_command(self.SEED_MASTER)
        assert list(worker.argv) == split_command(self.SEED_WORKER)
        assert master.display_command() == (
            "python -m torch.distributed.launch --nproc_per_node=4 --nnodes=2 --node_rank=0 "
            "--master_addr=localhost --master_port=2222 /workspace/algorithm/train.py"
        )

    def test_the_variables(self):
        master, worker = plan(make("pytorch")).replicas
        assert {k: master.env[k] for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE")} == {
            "MASTER_ADDR": "localhost",
            "MASTER_PORT": "2222",
            "WORLD_SIZE": "2",
        }
        assert (master.env["RANK"], worker.env["RANK"]) == ("0", "1")
        assert worker.env["MASTER_ADDR"] == "demo-worker-0"
        assert master.env["SLOTS"] == worker.env["SLOTS"] == "4"
        assert plan(make("pytorch", boards=0)).replicas[0].env["SLOTS"] == "1"

    SEED_TORCHRUN = """torchrun \\
--nnodes ${WORLD_SIZE} \\
--nproc_per_node ${SLOTS} \\
--node_rank ${RANK} \\
--master_addr ${MASTER_ADDR} \\
--master_port ${MASTER_PORT} \\
/workspace/algorithm/train.py"""

    def test_torchrun_is_left_alone(self):
        master, worker = plan(make("pytorch", self.SEED_TORCHRUN)).replicas
        # As typed, the variables filled in as the shell would.
        assert worker.display_command() == (
            "torchrun --nnodes 2 --nproc_per_node 4 --node_rank 1 "
            "--master_addr demo-worker-0 --master_port 2222 /workspace/algorithm/train.py"
        )
        assert master.argv[:8] == (
            "torchrun",
            "--nnodes",
            "2",
            "--nproc_per_node",
            "4",
            "--node_rank",
            "0",
            "--master_addr",
        )
        assert "torch.distributed.launch" not in master.argv

    def test_a_command_already_using_the_launcher_is_left_alone(self):
        command = "python -m torch.distributed.launch --nproc_per_node=2 train.py"
        for replica in plan(make("pytorch", command)).replicas:
            assert list(replica.argv) == split_command(command)


# --- seed 000: PyTorch-DeepSpeed ------------------------------------------------------------


class TestSeed000DeepSpeed:
    COMMAND = (
        "deepspeed /workspace/algorithm/train.py --epochs 5 "
        "--deepspeed --deepspeed_config ds_config.json"
    )

    def test_job_hostfile_of_a_2_node_4_board_job(self):
        launch = plan(make("deepspeed", self.COMMAND))
        for replica in launch.replicas:
            hostfile = replica.files["/job/hostfile"]
            assert hostfile == "demo-worker-0 slots=4\ndemo-worker-1 slots=4\n"
            for name in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "SLOTS"):
                assert name in replica.env

    def test_the_deepspeed_launcher_runs_on_worker_0(self):
        worker0, worker1 = plan(make("deepspeed", self.COMMAND)).replicas
        assert list(worker0.argv) == split_command(self.COMMAND)
        assert (worker1.runs_entry, worker1.argv) == (False, ())


# --- seed 000: single node and run commands ------------------------------------------------


class TestSeed000SingleNode:
    def test_the_command_as_typed(self):
        (replica,) = plan(make("single", "python3 train.py", node_count=1)).replicas
        assert replica.argv == ("python3", "train.py")

    def test_bash_c_is_the_way_to_several_statements(self):
        command = 'bash -c "KEY=VALUE python3 train.py && python3 evaluate.py"'
        (replica,) = plan(make("single", command, node_count=1)).replicas
        assert replica.argv == ("bash", "-c", "KEY=VALUE python3 train.py && python3 evaluate.py")
        assert replica.display_command() == (
            "bash -c 'KEY=VALUE python3 train.py && python3 evaluate.py'"
        )


# --- seed 002: MPI variables of the peer --------------------------------------------------


# --- SPEC J3 / seed 000: batch sub-task outputs --------------------------------------------


class TestBatchOutputs:
    def test_a_sub_task_writes_to_its_folder_without_knowing(self):
        outputs = Mount(source="/storage/alice/runs/demo-3", target="/workspace/outputs")
        launch = plan(make("pytorch", output_subdir="demo-3", mounts=[outputs]))
        for replica in launch.replicas:
            assert replica.env["CONSOLE_OUTPUT_DIR"] == "/workspace/outputs"
            assert replica.env["CONSOLE_OUTPUT_SUBDIR"] == "demo-3"
            assert replica.mounts == (outputs,)

    def test_a_regular_job_has_no_sub_folder(self):
        env = plan(make("single", node_count=1)).replicas[0].env
        assert env["CONSOLE_OUTPUT_DIR"] == "/workspace/outputs"
        assert "CONSOLE_OUTPUT_SUBDIR" not in env

    def test_an_outputs_mount_that_is_not_the_sub_tasks_folder_is_refused(self):
        outputs = Mount(source="/storage/alice/runs", target="/workspace/outputs/")
        with pytest.raises(ValueError, match="sub-task"):
            plan(make("mpi", output_subdir="demo-3", mounts=[outputs]))
