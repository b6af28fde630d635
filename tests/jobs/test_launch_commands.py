"""Reading run commands: splitting, launcher detection, variables, display."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from jobs.launch.commands import (
    command_words,
    display_command,
    expand_variables,
    split_command,
)


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("python train.py", ["python", "train.py"]),
        ("mpirun -np 2 \\\npython t.py", ["mpirun", "-np", "2", "python", "t.py"]),
        ("a \\\r\nb", ["a", "b"]),
        ('bash -c "a && b"', ["bash", "-c", "a && b"]),
        ("python t.py --name 'two words'", ["python", "t.py", "--name", "two words"]),
    ],
)
def test_split_command(command, argv):
    assert split_command(command) == argv


@pytest.mark.parametrize("command", ["python 'unclosed", "", "   ", "\\\n"])
def test_split_command_refuses(command):
    with pytest.raises(ValueError):
        split_command(command)


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("python train.py --deepspeed", {"python"}),
        ("/usr/local/bin/mpirun -np 2 python t.py", {"mpirun"}),
        ('bash -c "cd /x && mpirun python t.py"', {"bash", "cd", "mpirun"}),
        ("bash -lc 'source a.sh; deepspeed t.py'", {"bash", "source", "deepspeed"}),
        ("sh -o pipefail -c 'horovodrun -np 2 python t.py | tee log'", {"sh", "horovodrun", "tee"}),
        ("bash run.sh", {"bash"}),
        ("env A=1 exec deepspeed t.py", {"deepspeed"}),
        ("bash -c 'python t.py > mpirun 2>&1'", {"bash", "python"}),
        ('bash -c "python \'unclosed"', {"bash"}),
    ],
)
def test_command_words(command, words):
    assert command_words(command) == words


def test_expand_variables_fills_in_what_it_knows():
    env = {"RANK": "1", "MASTER_ADDR": "job-worker-0"}
    assert expand_variables(
        ["--rank", "$RANK", "--addr=${MASTER_ADDR}:1", "$HOME", "$RANKX", "${A:-b}", "$1"], env
    ) == ["--rank", "1", "--addr=job-worker-0:1", "$HOME", "$RANKX", "${A:-b}", "$1"]


@pytest.mark.parametrize(
    "command",
    [
        "torchrun --nnodes ${WORLD_SIZE} --node_rank $RANK --master_addr=${MASTER_ADDR} t.py",
        'python t.py --hosts "$TF_WORKER_HOSTS" --index=$VC_TASK_INDEX',
        "python t.py --config=${RANK}_${SLOTS}.json",
    ],
)
def test_expand_variables_agrees_with_a_shell(command):
    env = {
        "WORLD_SIZE": "2",
        "RANK": "1",
        "SLOTS": "4",
        "MASTER_ADDR": "job-worker-0",
        "TF_WORKER_HOSTS": "job-worker-0:5000,job-worker-1:5000",
        "VC_TASK_INDEX": "1",
    }
    shell = subprocess.run(
        ["bash", "-c", f"for word in {command}; do printf '%s\\n' \"$word\"; done"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert expand_variables(split_command(command), env) == shell.stdout.splitlines()


SEED_LINE = (
    "mpirun --allow-run-as-root -np 16 --bind-to none --map-by slot -x NCCL_DEBUG=INFO "
    "-x LD_LIBRARY_PATH -x PATH -mca pml ob1 -mca btl ^openib python /workspace/algorithm/train.py"
)


def test_display_is_shlex_join_but_leaves_caret_alone():
    argv = shlex.split(SEED_LINE)
    assert display_command(argv) == SEED_LINE
    assert (
        display_command(["echo", "a b", "it's", "", "^x"])
        == shlex.join(["echo", "a b", "it's", ""]) + " ^x"
    )


def test_wrapped_display_keeps_options_with_values_and_pastes_back():
    argv = shlex.split(SEED_LINE)
    wrapped = display_command(argv, width=40)
    lines = wrapped.split("\n")
    assert all(len(line) <= 40 for line in lines)
    assert all(line.endswith(" \\") for line in lines[:-1])
    assert "-np 16" in wrapped
    assert "-x NCCL_DEBUG=INFO" in wrapped
    assert shlex.split(wrapped.replace("\\\n", "")) == argv


def test_wrapped_display_of_nothing():
    assert display_command([], width=80) == ""
    assert display_command([]) == ""
