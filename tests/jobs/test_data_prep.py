"""SPEC J19, seed 000 "数据准备": real jobs on the local backend copy their datasets to the
node's fast storage before their code runs, mount the copy read-only, reuse a current copy,
and the beat's clean-up deletes copies unused for longer than the admin's days (never one a
live job uses)."""

from __future__ import annotations

import os
import time

import pytest

from console.sharing import Access
from jobs.models import Attempt, JobDataset, Phase
from resources.backends.local import prepared as local_prepared
from resources.catalog.mounts import storage_source
from resources.tasks import clean_prepared_data
from tests.jobs.execution_helpers import (
    admit_and_launch,
    log_of,
    make_job,
    program,
    wait_for_phase,
)
from tests.resources.catalog_factories import DatasetFactory, DatasetVersionFactory

pytestmark = pytest.mark.usefixtures("local_runs")

READER = """
import hashlib, os, sys
root = sys.argv[1]  # /workspace/... as the job knows it (the local backend rewrites argv)
data = open(os.path.join(root, "train.bin"), "rb").read()
print("READ", len(data), hashlib.sha256(data).hexdigest()[:12])
print("READ-ONLY MOUNT", bool(os.statvfs(root).f_flag & os.ST_RDONLY))
try:
    open(os.path.join(root, "train.bin"), "ab").write(b"x")
    print("WROTE")
except OSError as error:
    print("REFUSED", error.errno)
"""


def cifar(alice, vision, size: int = 3_000_000):
    dataset = DatasetFactory(
        owner=alice, project=vision, name="cifar", path="users/alice/cifar",
        others_access=Access.NONE,
    )  # fmt: skip
    version = DatasetVersionFactory(dataset=dataset, name="v2", path="users/alice/cifar/v2")
    folder = storage_source(version.path)
    folder.mkdir(parents=True)
    (folder / "train.bin").write_bytes(os.urandom(size))
    (folder / "labels").mkdir()
    (folder / "labels" / "names.txt").write_text("cat\ndog\n")
    return version, folder


def prepared_job(alice, vision, spec, version, name: str, **fields):
    job = make_job(
        alice, vision, spec, name=name, data_prep=True, node_names=["node-a"],
        command="python3 /workspace/algorithm/read.py /workspace/dataset/private/cifar",
        **fields,
    )  # fmt: skip
    JobDataset.objects.create(job=job, version=version, read_only=True)
    program(job, "read.py", READER)
    return job


def data_events(job) -> list[str]:
    return list(job.events.filter(item="data-prep").values_list("message", flat=True))


def copies(settings) -> list:
    return sorted(p for p in settings.NODE_CACHE_DIR.glob("*/data/*/*") if p.is_dir())


def test_datasets_are_copied_mounted_read_only_and_reused(settings, alice, vision, run_cluster):
    version, source = cifar(alice, vision)
    first = prepared_job(alice, vision, run_cluster["cpu"], version, "first")
    admit_and_launch()
    first = wait_for_phase(first, Phase.SUCCEEDED, Phase.ERROR, timeout=60)
    log = log_of(Attempt.objects.get(job=first))
    assert first.phase == Phase.SUCCEEDED, (first.reason, log)
    # The job read the whole dataset from the copy, and could not write to it.
    assert "READ 3000000" in log
    assert "READ-ONLY MOUNT True" in log, log  # the copy, mounted read-only
    assert "REFUSED" in log and "WROTE" not in log, log
    events = data_events(first)
    assert events[0] == "Preparing data on node-a: cifar/v2 (0 B of 3.0 MB)…", events
    assert events[-1].startswith("Data ready on node-a: cifar/v2, 3.0 MB copied in "), events
    [copy] = copies(settings)
    assert copy.is_relative_to(settings.NODE_CACHE_DIR / "node-a" / "data")
    assert (copy / "train.bin").read_bytes() == (source / "train.bin").read_bytes()
    assert (copy / "labels" / "names.txt").read_text() == "cat\ndog\n"
    # Nothing of the machine's folders in what the user reads.
    assert str(settings.NODE_CACHE_DIR) not in log + "".join(events)

    second = prepared_job(alice, vision, run_cluster["cpu"], version, "second")
    admit_and_launch()
    second = wait_for_phase(second, Phase.SUCCEEDED, Phase.ERROR, timeout=60)
    assert second.phase == Phase.SUCCEEDED, second.reason
    assert data_events(second) == [
        "Data ready on node-a: cifar/v2 (3.0 MB) reused, the copy there is current."
    ]
    assert copies(settings) == [copy]

    # The source changes: the next job gets a fresh copy, the old one stays until cleaned.
    (source / "labels" / "names.txt").write_text("cat\ndog\nbird\n")
    third = prepared_job(alice, vision, run_cluster["cpu"], version, "third")
    admit_and_launch()
    third = wait_for_phase(third, Phase.SUCCEEDED, Phase.ERROR, timeout=60)
    assert third.phase == Phase.SUCCEEDED, third.reason
    assert data_events(third)[-1].startswith("Data ready on node-a: cifar/v2, 3.0 MB copied")
    assert len(copies(settings)) == 2


def test_a_full_disk_ends_the_attempt_before_the_code_runs(
    settings, alice, vision, run_cluster, monkeypatch
):
    version, _source = cifar(alice, vision, size=200_000)
    job = prepared_job(alice, vision, run_cluster["cpu"], version, "full")
    # A node cache on a file system of 64 KB: the copy cannot fit.
    small = settings.NODE_CACHE_DIR
    small.mkdir()
    if os.system(f"mount -t tmpfs -o size=64k tmpfs {small} 2>/dev/null") != 0:
        pytest.skip("cannot mount a small file system here (needs root)")
    try:
        admit_and_launch()
        job = wait_for_phase(job, Phase.ERROR, Phase.SUCCEEDED, timeout=60)
        attempt = Attempt.objects.get(job=job)
        assert job.phase == Phase.ERROR
        assert data_events(job)[-1] == (
            "Data preparation failed on node-a: cifar/v2: the node's fast storage is full. "
            "The job's command does not run."
        )
        assert "READ" not in log_of(attempt)  # the command never ran
        assert "data preparation of cifar/v2 failed on node-a" in job.reason
    finally:
        os.system(f"umount {small}")


def test_clean_up_deletes_copies_unused_for_longer_than_the_retention(
    settings, alice, vision, run_cluster
):
    version, _source = cifar(alice, vision, size=1000)
    done = prepared_job(alice, vision, run_cluster["cpu"], version, "done")
    admit_and_launch()
    done = wait_for_phase(done, Phase.SUCCEEDED, Phase.ERROR, timeout=60)
    assert done.phase == Phase.SUCCEEDED, done.reason
    [copy] = copies(settings)

    assert clean_prepared_data() == []  # used a moment ago: kept for 7 days
    eight_days_ago = time.time() - 8 * 86400
    for path in (copy, copy.with_name(copy.name + ".use")):
        os.utime(path, (eight_days_ago, eight_days_ago))

    # A live job holding the copy keeps it, however old its last use.
    live = make_job(
        alice, vision, run_cluster["cpu"], name="live", data_prep=True, command="sleep 30",
        node_names=["node-a"],
        graceful_shutdown_seconds=1,
    )  # fmt: skip
    JobDataset.objects.create(job=live, version=version, read_only=True)
    admit_and_launch()
    live = wait_for_phase(live, Phase.RUNNING, Phase.ERROR, timeout=60)
    assert live.phase == Phase.RUNNING, live.reason
    os.utime(copy.with_name(copy.name + ".use"), (eight_days_ago, eight_days_ago))
    assert clean_prepared_data() == []
    assert copy.is_dir()

    from jobs.execution import stopping

    stopping.request_stop(live, alice)
    stopping._stop_now(Attempt.objects.get(job=live), 1)
    live = wait_for_phase(live, Phase.STOPPED, timeout=30)
    assert clean_prepared_data() == []  # its last use is now
    later = time.time() + 8 * 86400
    assert local_prepared.clean(settings.NODE_CACHE_DIR, 7 * 86400, now=later) == [copy]
    assert not copy.exists()
