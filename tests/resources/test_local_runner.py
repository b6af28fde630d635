"""SPEC E1: the local backend runs workloads as real processes (no mocks). Lifecycle: success,
failure, missing commands, peers that reach each other, stop and kill, logs, usage,
duplicate submits and clean-up. Plans of jobs.launch and recovery: test_local_runner_plans.
"""

from __future__ import annotations

import re
import signal
import time

import pytest

from resources.backends.base import (
    ReplicaState,
    UnknownWorkload,
    Workload,
    WorkloadState,
)
from resources.backends.local.backend import LocalBackend
from tests.helpers import wait_until
from tests.resources.test_local_runner_helpers import elapsed, replica, running

PYTHON = "python3"


@pytest.fixture
def runs(tmp_path):
    with running(tmp_path) as runs:
        yield runs


def single(workload_id: str, argv, **fields) -> Workload:
    graceful = fields.pop("graceful_seconds", 5)
    return Workload(
        id=workload_id,
        replicas=(replica("job-worker-0", argv, **fields),),
        graceful_seconds=graceful,
    )


def test_single_replica_succeeds_in_its_workspace(runs):
    runs.program(
        "main.py",
        """
        import os, sys
        print("cwd", os.getcwd())
        for name in ("CUDA_VISIBLE_DEVICES", "CONSOLE_VISIBLE_BOARDS", "HOSTNAME", "CONFIG"):
            print(name, os.environ.get(name))
        print("config", open(os.environ["CONFIG"]).read())
        with open(sys.argv[1], "w") as out:
            out.write("trained")
        """,
    )
    outputs = runs.folder("out/job-0")
    runs.runner.submit(
        single(
            "job-1-1",
            (PYTHON, "/workspace/algorithm/main.py", "/workspace/outputs/model.txt"),
            env={"CONFIG": "/etc/job/config.ini"},
            files={"/etc/job/config.ini": "peer=job-worker-0:5000 data=/workspace/outputs\n"},
            mounts=(
                (str(runs.storage / "algorithm"), "/workspace/algorithm", True),
                (str(outputs), "/workspace/outputs", False),
            ),
            slots=(2, 3),
        )
    )
    status = runs.wait("job-1-1")
    log = runs.log("job-1-1", "job-worker-0")
    assert status.state == WorkloadState.SUCCEEDED, log
    assert status.reason == "worker 0 exited with code 0"
    (only,) = status.replicas
    assert (only.name, only.state, only.exit_code) == ("job-worker-0", "succeeded", 0)
    folder = runs.workload_folder("job-1-1") / "job-worker-0"
    # What the replica saw: this machine's folders, and in the plan's file host names and
    # in-container paths that lead somewhere real (the log as written) ...
    raw = (folder / "log.txt").read_text()
    assert f"cwd {folder}/workspace\n" in raw
    assert f"CONFIG {folder}/etc/job/config.ini\n" in raw
    assert re.search(rf"config peer=127\.\d+\.\d+\.1:5000 data={folder}/workspace/outputs", raw)
    # ... named back by the job's paths in the log the backend serves.
    assert "cwd /workspace\n" in log and "CONFIG /etc/job/config.ini\n" in log
    assert "CUDA_VISIBLE_DEVICES 2,3\n" in log and "CONSOLE_VISIBLE_BOARDS 2,3\n" in log
    assert (outputs / "model.txt").read_text() == "trained"
    assert (folder / "exit_code").read_text() == "0\n"


def test_failure_reports_the_exit_code(runs):
    runs.runner.submit(single("job-2-1", (PYTHON, "-c", "import sys; sys.exit(3)")))
    status = runs.wait("job-2-1")
    assert status.state == WorkloadState.FAILED
    assert status.reason == "worker 0 exited with code 3"
    assert (status.replicas[0].state, status.replicas[0].exit_code) == ("failed", 3)


@pytest.mark.parametrize(
    ("argv", "code", "reason"),
    [
        (("pyhton", "train.py"), 127, "command not found: pyhton"),
        (("/workspace/algorithm/data.txt",), 126, "command not executable:"),
    ],
)
def test_a_command_that_cannot_run_fails_at_once(runs, argv, code, reason):
    data = runs.program("data.txt", "not a program\n")
    data.chmod(0o644)
    started = time.monotonic()
    runs.runner.submit(
        single(
            "job-3-1",
            argv,
            mounts=((str(runs.storage / "algorithm"), "/workspace/algorithm", True),),
        )
    )
    status = runs.wait("job-3-1", timeout=5)
    assert elapsed(started) < 5
    assert status.state == WorkloadState.FAILED
    assert status.reason.startswith(reason)
    assert status.replicas[0].exit_code == code
    assert reason in runs.log("job-3-1", "job-worker-0")


PEER = """
import json, os, socket, sys, threading, time
me, peer, port = os.environ["ME"], os.environ["PEER"], int(os.environ["PORT"])
# Both replicas listen on the same port: each has an address of its own.
server = socket.create_server((me, port))
def serve():
    connection, _ = server.accept()
    connection.sendall(os.environ["HOSTNAME"].encode())
    connection.close()
threading.Thread(target=serve, daemon=True).start()
deadline = time.monotonic() + 15
while True:
    try:
        with socket.create_connection((peer, port), timeout=1) as connection:
            print("me", me, "reached", peer, "who is", connection.recv(100).decode(), flush=True)
            break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit("peer never answered")
        time.sleep(0.05)
print("hosts", json.load(open("/etc/peers.json")))
time.sleep(0.5)  # let the peer connect to us too
"""


def test_two_replicas_reach_each_other_by_name(runs):
    names = ("pair-worker-0", "pair-worker-1")
    files = {"/etc/peers.json": '{"hosts": ["pair-worker-0:7000", "pair-worker-1:7000"]}'}
    # The program names /etc/peers.json in its argv: rewritten to the replica's copy.
    replicas = tuple(
        replica(
            name,
            (PYTHON, "-c", PEER),
            env={"ME": name, "PEER": names[1 - i], "PORT": "7000"},
            files=files,
        )
        for i, name in enumerate(names)
    )
    runs.runner.submit(Workload(id="pair-1", replicas=replicas, graceful_seconds=2))
    status = runs.wait("pair-1")
    logs = [runs.log("pair-1", name) for name in names]
    assert status.state == WorkloadState.SUCCEEDED, logs
    addresses = []
    for i, log in enumerate(logs):
        words = log.split()
        me, peer = words[words.index("me") + 1], words[words.index("reached") + 1]
        assert words[words.index("is") + 1] == names[1 - i]
        assert me.startswith("127.") and peer.startswith("127.")
        addresses.append((me, peer))
        assert f"'{peer}:7000'" in log  # the file's host names were rewritten too
    assert addresses[0] == addresses[1][::-1] and addresses[0][0] != addresses[0][1]


def test_stop_ends_a_workload_within_the_graceful_period(runs):
    sleeper = ("bash", "-c", "sleep 60 & sleep 60 & echo started; wait")
    replicas = (replica("nap-worker-0", sleeper), replica("nap-worker-1", sleeper))
    runs.runner.submit(Workload(id="nap-1", replicas=replicas, graceful_seconds=30))
    runs.wait_for_log("nap-1", "nap-worker-1", "started")
    groups = runs.replica_pids("nap-1")
    assert len(runs.leftovers("nap-1")) >= 6  # bash and two sleeps per replica
    assert runs.runner.supervised() == ["nap-1"]
    asked = time.monotonic()
    runs.runner.stop("nap-1", graceful_seconds=3)
    assert elapsed(asked) < 1.5  # the caller does not wait out the 3 s graceful period
    status = runs.wait("nap-1", timeout=3 + 2)
    assert elapsed(asked) < 3 + 2
    assert status.state == WorkloadState.STOPPED and status.reason == "stopped on request"
    assert {(r.state, r.exit_code) for r in status.replicas} == {("stopped", 128 + 15)}
    # Not one member of the replicas' process groups is left (leftovers asks psutil).
    assert len(groups) == 2 and runs.nothing_left("nap-1")
    assert runs.runner.supervised() == []


def test_a_program_ignoring_sigterm_is_killed_after_the_graceful_period(runs):
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    stubborn += "print('ready', flush=True); time.sleep(60)"
    runs.runner.submit(single("stubborn-1", (PYTHON, "-c", stubborn)))
    runs.wait_for_log("stubborn-1", "job-worker-0", "ready")
    asked = time.monotonic()
    runs.runner.stop("stubborn-1", graceful_seconds=1)
    status = runs.wait("stubborn-1", timeout=4)
    assert 1 <= elapsed(asked) < 1 + 2
    assert status.state == WorkloadState.STOPPED
    (only,) = status.replicas
    assert (only.state, only.exit_code) == (ReplicaState.STOPPED, 128 + signal.SIGKILL)
    assert only.reason == "killed after 1 s: it did not end on SIGTERM"
    assert runs.nothing_left("stubborn-1")


def test_a_failing_replica_fails_the_workload_and_stops_the_others(runs):
    replicas = (
        replica("mix-worker-0", ("sleep", "60")),
        replica("mix-worker-1", ("bash", "-c", "sleep 0.3; exit 2")),
        replica("mix-ps-0", ("sleep", "60"), awaited=False),
    )
    runs.runner.submit(Workload(id="mix-1", replicas=replicas, graceful_seconds=2))
    status = runs.wait("mix-1")
    assert (status.state, status.reason) == ("failed", "worker 1 exited with code 2")
    states = {r.name: (r.state, r.exit_code) for r in status.replicas}
    assert states == {
        "mix-worker-0": ("stopped", 143),
        "mix-worker-1": ("failed", 2),
        "mix-ps-0": ("stopped", 143),
    }
    assert runs.nothing_left("mix-1")


def test_success_of_the_awaited_replicas_stops_the_parameter_server(runs):
    replicas = (
        replica("tf-worker-0", ("bash", "-c", "sleep 0.3")),
        replica("tf-ps-0", ("sleep", "60"), awaited=False),
    )
    runs.runner.submit(Workload(id="tf-1", replicas=replicas, graceful_seconds=2))
    status = runs.wait("tf-1")
    assert (status.state, status.reason) == ("succeeded", "worker 0 exited with code 0")
    assert [r.state for r in status.replicas] == ["succeeded", "stopped"]


def test_logs_follow_the_output_as_it_grows(runs):
    program = (
        "import time\n"
        "for line in ('one', 'deux é', 'three 中文'):\n"
        "    print(line, flush=True); time.sleep(0.3)\n"
    )
    runs.runner.submit(single("talk-1", (PYTHON, "-c", program)))
    seen, offset = "", 0
    chunks = 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        text, offset = runs.runner.logs("talk-1", "job-worker-0", offset)
        seen += text
        chunks += bool(text)
        if runs.runner.poll("talk-1").state.finished and not text:
            break
        time.sleep(0.05)
    assert seen == "one\ndeux é\nthree 中文\n"
    assert chunks >= 2  # read while it was being written, not only at the end
    assert offset == len(seen.encode())
    # A window that ends inside a line stops at the line's start (a path in it is named
    # whole); inside a character, before it; the next one starts there.
    cut = len(b"one\ndeux ") + 1
    text, after = runs.runner.logs("talk-1", "job-worker-0", 0, cut)
    assert (text, after) == ("one\n", len(b"one\n"))
    text, after = runs.runner.logs("talk-1", "job-worker-0", after, len(b"deux ") + 1)
    assert (text, after) == ("deux ", cut - 1)
    assert runs.runner.logs("talk-1", "job-worker-0", after, 3)[0] == "é\n"
    assert runs.runner.logs("talk-1", "job-worker-0", offset) == ("", offset)
    # Past the end (a seek to 10**18 fails with EINVAL) there is nothing; follow from the end.
    assert runs.runner.logs("talk-1", "job-worker-0", 10**18) == ("", offset)
    assert runs.runner.log_size("talk-1", "job-worker-0") == offset
    with pytest.raises(UnknownWorkload):
        runs.runner.log_size("talk-1", "job-worker-9")


def test_usage_reports_cpu_and_memory(runs):
    busy = "x = bytearray(64 << 20)\nprint('ready', flush=True)\nwhile True: pass\n"
    runs.runner.submit(single("busy-1", (PYTHON, "-c", busy)))
    runs.wait_for_log("busy-1", "job-worker-0", "ready")
    runs.runner.usage("busy-1")
    time.sleep(0.5)
    (sample,) = runs.runner.usage("busy-1")
    assert sample.replica == "job-worker-0"
    assert sample.cpu_percent > 10  # a busy loop, on a machine others share
    assert sample.memory_mib > 60
    assert (sample.accelerator_util, sample.accelerator_memory_mib) == (None, None)
    runs.runner.stop("busy-1", 1)
    runs.wait("busy-1")
    assert runs.runner.usage("busy-1") == []


def test_submit_twice_is_a_no_op_and_cleanup_leaves_nothing(runs):
    workload = single("twice-1", ("sleep", "60"))
    runs.runner.submit(workload)
    runs.runner.submit(workload)  # a duplicate delivery
    wait_until(lambda: runs.runner.poll("twice-1").state == "running", 10, 0.05)
    assert len(runs.replica_pids("twice-1")) == 1
    with pytest.raises(ValueError, match="another workload"):
        runs.runner.submit(single("twice-1", ("sleep", "30")))
    folder = runs.workload_folder("twice-1")
    runs.runner.cleanup("twice-1")
    assert not folder.exists()
    assert runs.nothing_left("twice-1")
    runs.runner.cleanup("twice-1")  # and again: nothing to do
    runs.runner.stop("twice-1", 5)
    with pytest.raises(UnknownWorkload):
        runs.runner.poll("twice-1")


def test_refuses_workloads_it_cannot_run(runs):
    with pytest.raises(ValueError, match="awaited but runs nothing"):
        runs.runner.submit(
            Workload(id="bad-1", replicas=(replica("bad-worker-0", (), runs_entry=False),))
        )
    with pytest.raises(ValueError, match="not an absolute path"):
        runs.runner.submit(single("bad-2", ("true",), files={"../etc/x": ""}))
    assert not (runs.root / "bad-1").exists()


def test_the_local_backend_runs_workloads_under_runs_dir(settings, tmp_path):
    settings.RUNS_DIR = tmp_path / "var" / "runs"
    backend = LocalBackend()
    with running(tmp_path) as runs:
        runs.runner = backend.runner  # so that the clean-up covers this root
        runs.root = backend.runner.root
        assert runs.root == tmp_path / "var" / "runs"
        backend.submit(single("via-1", ("echo", "hello")))
        status = runs.wait("via-1")
        assert status.state == WorkloadState.SUCCEEDED
        assert backend.poll("via-1") == status
        assert backend.logs("via-1", "job-worker-0") == ("hello\n", 6)
        assert backend.usage("via-1") == []
        assert [found.workload_id for found in backend.recover()] == ["via-1"]
        backend.stop("via-1", 5)  # finished already: nothing to do
        backend.cleanup("via-1")
        with pytest.raises(UnknownWorkload):
            backend.poll("via-1")


class WorkerDied(BaseException):
    """What a SIGKILL of the submitting worker leaves: the workload laid out, its
    supervisor never started."""


@pytest.mark.parametrize("found_by", ["submit", "poll"])
def test_a_workload_abandoned_mid_submit_is_started_once(runs, monkeypatch, found_by):
    import os

    from resources.backends.local import runner as local_runner

    outputs = runs.folder("out/job-0")
    workload = single(
        "job-7-1", ("sh", "-c", "echo ran >> /workspace/outputs/runs.txt"),
        mounts=((str(outputs), "/workspace/outputs", False),),
    )  # fmt: skip

    def dies(self, folder, *, again=False):
        raise WorkerDied

    with monkeypatch.context() as patched:
        patched.setattr(local_runner.LocalRunner, "_start_supervisor", dies)
        with pytest.raises(WorkerDied):
            runs.runner.submit(workload)
    folder = runs.workload_folder("job-7-1")
    assert not (folder / "supervisor.json").exists()
    # Moments later it is only "being submitted": nobody starts it twice.
    runs.runner.submit(workload)
    assert runs.runner.poll("job-7-1").state == WorkloadState.PENDING
    assert not (folder / "supervisor.json").exists()
    past = time.time() - local_runner.ABANDONED_SECONDS - 1
    os.utime(folder / "workload.json", (past, past))
    if found_by == "submit":
        runs.runner.submit(workload)  # a later delivery of the same submit
    else:
        runs.runner.poll("job-7-1")  # the next sync's look at it
    assert runs.wait("job-7-1").state == WorkloadState.SUCCEEDED
    runs.runner.submit(workload)
    runs.runner.poll("job-7-1")
    assert (outputs / "runs.txt").read_text() == "ran\n"  # it ran once, not twice
