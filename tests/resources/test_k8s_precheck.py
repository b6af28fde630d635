"""Seed 004's prechecks as a cluster's pods run them (SPEC F1): the init container's shell
script, run here for real by the shells images have, and what the console reads back from a
pod (its termination message) and makes of a pod whose precheck failed."""

from __future__ import annotations

import glob
import shutil
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resources.backends.base import Checked, ReplicaState
from resources.backends.kubernetes import precheck
from resources.backends.kubernetes.status import replica_status, task_of

SHELLS = [s for s in ("dash", "bash", "sh") if shutil.which(s)]


def run(shell, tmp_path, **env):
    out = tmp_path / "termination-log"
    values = {
        "PATH": "/usr/bin:/bin",
        "CONSOLE_PRECHECK_OUT": str(out),
        "CONSOLE_PRECHECK_PEERS": "localhost",
        "CONSOLE_PRECHECK_PEER_SECONDS": "1",
        "CONSOLE_PRECHECK_ROOT_GB": "0",
        "CONSOLE_PRECHECK_SHM_GB": "0",
        "CONSOLE_PRECHECK_CACHE_GB": "0",
        "CONSOLE_PRECHECK_CACHE_DIR": str(tmp_path),
        "CONSOLE_PRECHECK_ULIMIT": "0",
        "CONSOLE_PRECHECK_BOARDS": "0",
        **env,
    }
    done = subprocess.run([shell, "-c", precheck.SCRIPT], env=values, capture_output=True,
                          text=True, timeout=30)  # fmt: skip
    message = out.read_text()
    assert done.stdout == message  # the log says what the message says (seed 004's "item")
    return done.returncode, {c.item: c for c in precheck.parse(message, "gpu-01", "worker-0")}


@pytest.mark.parametrize("shell", SHELLS)
def test_a_healthy_node_passes_every_item(shell, tmp_path):
    code, found = run(shell, tmp_path)
    assert code == 0
    assert list(found) == ["dns", "disk-size root", "disk-size shm", "disk-size cache"]
    assert all(c.ok for c in found.values())
    free = shutil.disk_usage(tmp_path).free / 1000**3
    value = float(found["disk-size cache"].value.removesuffix(" GB"))
    assert abs(value - free) < 1.0 and found["disk-size cache"].needed == "0 GB"


@pytest.mark.parametrize("shell", SHELLS)
def test_each_failed_item_says_what_it_found_and_ends_with_1(shell, tmp_path):
    boards = len(glob.glob("/dev/nvidia[0-9]*")) + 1  # one more than this machine has
    code, found = run(
        shell, tmp_path,
        CONSOLE_PRECHECK_PEERS="localhost no-such-peer.invalid",
        CONSOLE_PRECHECK_SHM_GB="1000000",
        CONSOLE_PRECHECK_BOARDS=str(boards),
    )  # fmt: skip
    assert code == 1
    assert (found["dns"].ok, found["dns"].value) == (False, "no-such-peer.invalid")
    assert found["disk-size shm"].ok is False and found["disk-size shm"].needed == "1000000 GB"
    assert found["disk-size root"].ok is True
    gpu = found["gpu-check"]
    assert (gpu.ok, gpu.value, gpu.needed) == (False, str(boards - 1), str(boards))


@pytest.mark.parametrize("shell", SHELLS)
def test_the_limits_are_checked_on_infiniband_only(shell, tmp_path):
    assert "ulimit" not in run(shell, tmp_path)[1]
    code, found = run(shell, tmp_path, CONSOLE_PRECHECK_ULIMIT="1")
    limit = found["ulimit"]
    # The seed's four limits: far above what a test machine's shell is given.
    low = [name for name in precheck_names() if name in limit.value]
    assert limit.ok is (not low) and code == (1 if low else 0)


def precheck_names():
    return ("max locked memory", "open files", "stack size", "max user processes")


def test_a_missing_cache_folder_is_not_measured_rather_than_failed(tmp_path):
    code, found = run(SHELLS[0], tmp_path, CONSOLE_PRECHECK_CACHE_DIR=str(tmp_path / "none"))
    assert code == 0 and found["disk-size cache"].ok is None


VALUES = st.text(st.characters(blacklist_characters="\t\n\r", blacklist_categories=("Cs",)),
                 max_size=30)  # fmt: skip


@given(st.lists(st.tuples(
    st.sampled_from(("dns", "disk-size root", "ulimit", "gpu-check")),
    st.sampled_from(("passed", "failed", "unmeasured")),
    VALUES,
)))  # fmt: skip
def test_items_read_back_as_written_and_nothing_else(items):
    lines = ["noise before"] + [f"item\t{i}\t{r}\t{v}\t1 GB" for i, r, v in items] + ["tail"]
    found = precheck.parse("\n".join(lines), "gpu-01", "worker-0")
    ok = {"passed": True, "failed": False, "unmeasured": None}
    assert found == [Checked(i, "gpu-01", "worker-0", ok[r], v, "1 GB") for i, r, v in items]


def pod(init_status: dict | None, phase: str = "Failed") -> dict:
    status = {"phase": phase, "containerStatuses": [
        {"name": "main", "state": {"waiting": {"reason": "PodInitializing"}}}
    ]}  # fmt: skip
    if init_status is not None:
        status["initContainerStatuses"] = [init_status]
    return {
        "metadata": {"name": "job-7-1-worker-0-0",
                     "labels": {"volcano.sh/task-spec": "worker-0"}},
        "spec": {"nodeName": "gpu-03"},
        "status": status,
    }  # fmt: skip


def test_a_pod_whose_precheck_failed_reads_as_failed_by_it_with_its_items():
    message = "item\tdns\tpassed\t\t\nitem\tgpu-check\tfailed\t3\t4\n"
    failed = pod({"name": "precheck", "state": {"terminated": {"exitCode": 1, "message": message}}})
    replica = replica_status(failed)
    assert replica.state == ReplicaState.FAILED and replica.exit_code is None
    assert replica.reason == "worker-0: its precheck step failed (exit code 1)"
    assert precheck.results([failed], task_of) == (
        Checked("dns", "gpu-03", "worker-0", True, "", ""),
        Checked("gpu-check", "gpu-03", "worker-0", False, "3", "4"),
    )


def test_a_precheck_still_running_reports_nothing_yet():
    running = pod({"name": "precheck", "state": {"running": {}}}, phase="Pending")
    assert precheck.results([running], task_of) == ()
    assert precheck.results([pod(None, phase="Pending")], task_of) == ()
