"""The Kubernetes backend's pure parts: status mapping, the log copy, sealed credentials."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console import sealed
from resources.backends.base import ReplicaState, WorkloadState
from resources.backends.kubernetes.logs import LogStore
from resources.backends.kubernetes.status import workload_status


def pod(task: str, phase: str = "Running", **state) -> dict:
    container = {"name": "main", "state": state or {"running": {"startedAt": "t"}}}
    return {
        "metadata": {"name": f"job-1-1-{task}-0", "labels": {"volcano.sh/task-spec": task}},
        "status": {"phase": phase, "containerStatuses": [container]},
    }


def job(phase: str, tasks: int = 2, **metadata) -> dict:
    return {
        "metadata": {"name": "job-1-1", **metadata},
        "spec": {"minAvailable": tasks, "queue": "default", "tasks": [{}] * tasks},
        "status": {"state": {"phase": phase}},
    }


class TestStatus:
    def test_running_when_every_pod_runs(self):
        status = workload_status(job("Running"), [pod("worker-0"), pod("worker-1")])
        assert status.state == WorkloadState.RUNNING
        assert [r.state for r in status.replicas] == [ReplicaState.RUNNING] * 2

    def test_completed_is_success(self):
        done = pod("worker-0", "Succeeded", terminated={"exitCode": 0, "reason": "Completed"})
        assert workload_status(job("Completed", 1), [done]).state == WorkloadState.SUCCEEDED

    def test_aborted_names_the_pod_and_its_exit_code(self):
        failed = pod("worker-1", "Failed", terminated={"exitCode": 3, "reason": "Error"})
        status = workload_status(job("Aborted"), [pod("worker-0"), failed])
        assert status.state == WorkloadState.FAILED
        assert status.reason == "worker-1 exited with code 3"
        assert [r.exit_code for r in status.replicas if r.state == "failed"] == [3]

    def test_out_of_memory_says_so(self):
        oom = pod("worker-0", "Failed", terminated={"exitCode": 137, "reason": "OOMKilled"})
        status = workload_status(job("Failed", 1), [oom])
        assert status.reason == "worker-0 ran out of memory (OOMKilled, exit code 137)"

    def test_a_failed_pod_fails_the_workload_before_volcano_moves(self):
        failed = pod("worker-0", "Failed", terminated={"exitCode": 1})
        assert workload_status(job("Running", 1), [failed]).state == WorkloadState.FAILED

    def test_pending_says_why_in_the_schedulers_words(self):
        waiting = pod("worker-0", "Pending", waiting={"reason": "ContainerCreating"})
        waiting["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}
        ]  # fmt: skip
        status = workload_status(job("Pending", 1), [waiting])
        assert status.state == WorkloadState.PENDING
        assert status.reason == "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."

    def test_pending_in_the_queue(self):
        group = {"status": {"phase": "Pending"}}
        status = workload_status(job("Pending", 1), [], group)
        assert status.reason == "waiting for room in the Volcano queue default"

    def test_an_image_that_cannot_be_pulled_is_said(self):
        waiting = pod(
            "worker-0", "Pending",
            waiting={"reason": "ErrImagePull", "message": 'pull "x/y:1": not found'},
        )  # fmt: skip
        status = workload_status(job("Pending", 1), [waiting])
        assert status.state == WorkloadState.PENDING
        assert status.reason == 'ErrImagePull: pull "x/y:1": not found'

    def test_an_invalid_image_name_fails_at_once(self):
        waiting = pod("worker-0", "Pending", waiting={"reason": "InvalidImageName"})
        assert workload_status(job("Pending", 1), [waiting]).state == WorkloadState.FAILED

    def test_deleted_with_no_pod_left_is_stopped(self):
        status = workload_status(job("Terminating", deletionTimestamp="t"), [])
        assert status.state == WorkloadState.STOPPED

    def test_deleting_with_pods_still_running_is_not_finished(self):
        status = workload_status(job("Terminating", 1, deletionTimestamp="t"), [pod("worker-0")])
        assert not status.state.finished
        assert status.reason == "stopping"


class TestLost:
    """Seed 003: a pod the cluster took away (node NotReady, force-deleted, evicted) is a
    fault of the node, said with ``node_lost``; a pod failing by itself is not."""

    def test_a_force_deleted_pod_aborts_its_job_as_lost(self):
        killed = pod("worker-1", "Failed", terminated={"exitCode": 137, "reason": "Error"})
        killed["metadata"]["deletionTimestamp"] = "t"  # Volcano killed it after the abort
        status = workload_status(job("Aborted"), [killed])
        assert status.state == WorkloadState.FAILED and status.node_lost
        assert status.reason.startswith("1 of its pods were deleted outside the console")

    def test_its_only_pod_gone(self):
        status = workload_status(job("Aborted", 1), [])
        assert status.state == WorkloadState.FAILED and status.node_lost

    def test_a_pod_the_taint_manager_evicted(self):
        evicted = pod("worker-0", "Failed", terminated={"exitCode": 137, "reason": "Error"})
        evicted["status"]["conditions"] = [
            {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
             "message": "Taint manager: deleting due to NoExecute taint"}
        ]  # fmt: skip
        status = workload_status(job("Running", 1), [evicted])
        assert status.node_lost and "NoExecute taint" in status.reason

    def test_a_pod_on_a_lost_node(self):
        gone = pod("worker-0", "Failed", terminated={"exitCode": 137, "reason": "Error"})
        gone["status"] |= {"reason": "NodeLost", "message": "Node gpu-01 which was running "
                           "pod worker-0 is unresponsive"}  # fmt: skip
        status = workload_status(job("Aborted", 1), [gone])
        assert status.node_lost and "unresponsive" in status.reason

    def test_its_own_failure_is_not_a_loss_even_once_the_others_are_gone(self):
        failed = pod("worker-1", "Failed", terminated={"exitCode": 3, "reason": "Error"})
        status = workload_status(job("Aborted"), [failed])
        assert not status.node_lost and status.reason == "worker-1 exited with code 3"

    def test_our_own_stop_is_not_a_loss(self):
        status = workload_status(job("Aborted", deletionTimestamp="t"), [])
        assert not status.node_lost


def stamp(second: int, fraction: int) -> str:
    return f"2026-11-24T22:00:{second:02d}.{fraction:09d}Z"


lines = st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 3), st.text("abc é", min_size=0, max_size=6)),
    max_size=30,
).map(lambda items: sorted(items, key=lambda item: (item[0], item[1])))


class TestLogCopy:
    @settings(max_examples=150, deadline=None)
    @given(lines, st.lists(st.integers(0, 30), max_size=6))
    def test_overlapping_answers_keep_every_line_once(self, tmp_path_factory, items, cuts):
        """The API answers from the last kept second on; whatever the cut points, the copy
        holds each line exactly once, in order."""
        store = LogStore(tmp_path_factory.mktemp("logs"))
        stream = [(stamp(s, f), text) for s, f, text in items]
        for cut in [*sorted(cuts), len(stream)]:
            since = store.since("w", "r")
            answer = [
                f"{ts} {text}\n" for ts, text in stream[:cut] if not since or ts[:19] >= since[:19]
            ]
            store.add("w", "r", "".join(answer))
        text, _ = store.read("w", "r", 0, 1 << 20)
        assert text == "".join(f"{line}\n" for _ts, line in stream)

    def test_a_line_still_being_written_waits(self, tmp_path):
        store = LogStore(tmp_path)
        store.add("w", "r", f"{stamp(1, 0)} one\n{stamp(1, 5)} tw")
        assert store.read("w", "r", 0, 100)[0] == "one\n"
        store.add("w", "r", f"{stamp(1, 0)} one\n{stamp(1, 5)} two\n")
        assert store.read("w", "r", 0, 100)[0] == "one\ntwo\n"

    def test_the_last_copy_keeps_an_unfinished_line(self, tmp_path):
        store = LogStore(tmp_path)
        store.add("w", "r", f"{stamp(1, 0)} bye", final=True)
        assert store.read("w", "r", 0, 100)[0] == "bye\n"
        assert not store.due("w", "r", 0)  # nothing more to copy

    def test_reads_never_split_a_character(self, tmp_path):
        store = LogStore(tmp_path)
        store.add("w", "r", f"{stamp(1, 0)} 训练\n")
        text, offset = store.read("w", "r", 0, 4)  # "训" is 3 bytes, "练" would be cut
        assert (text, offset) == ("训", 3)


class TestSealed:
    def test_round_trip_and_ciphertext(self, settings):
        settings.CREDENTIALS_KEY = "k" * 40
        box = sealed.seal("a-token")
        assert "a-token" not in box
        assert sealed.unseal(box) == "a-token"

    def test_another_key_cannot_open_it(self, settings):
        settings.CREDENTIALS_KEY = "first-key" * 5
        box = sealed.seal("a-token")
        settings.CREDENTIALS_KEY = "other-key" * 5
        with pytest.raises(sealed.Unreadable):
            sealed.unseal(box)

    def test_empty_stays_empty(self):
        assert sealed.seal("") == ""
        assert sealed.unseal("") == ""
