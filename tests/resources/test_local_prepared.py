"""The local nodes' prepared data (SPEC J19): copies made once and reused while current, safe
when two workloads prepare the same dataset at once, and cleaned only when unused."""

from __future__ import annotations

import os
import threading
import time

import pytest

from resources.backends.local import prepared


@pytest.fixture
def source(tmp_path):
    folder = tmp_path / "storage" / "cifar" / "v2"
    (folder / "labels").mkdir(parents=True)
    (folder / "train.bin").write_bytes(os.urandom(4 * prepared.CHUNK + 5))
    (folder / "labels" / "names.txt").write_text("cat\ndog\n")
    return folder


def prepare(cache, source, stop=lambda: False, progress=None):
    return prepared.prepare(
        cache, "node-a", source, progress=progress or (lambda done, total: None),
        stop_requested=stop,
    )  # fmt: skip


def test_two_workloads_preparing_at_once_make_one_copy_and_share_it(tmp_path, source):
    cache = tmp_path / "cache"
    results, errors = [], []

    def one():
        try:
            results.append(prepare(cache, source))
        except Exception as error:  # pragma: no cover - said by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert len({r.path for r in results}) == 1
    assert sorted(r.reused for r in results) == [False, True, True, True]
    copy = results[0].path
    assert (copy / "train.bin").read_bytes() == (source / "train.bin").read_bytes()
    assert not [p for p in copy.parent.iterdir() if p.name.startswith(prepared.COPY_PREFIX)]
    for result in results:
        prepared.release(result)


def test_a_changed_source_gets_a_new_copy_and_unchanged_stat_is_current(tmp_path, source):
    cache = tmp_path / "cache"
    first = prepare(cache, source)
    prepared.release(first)
    assert prepare(cache, source).path == first.path
    (source / "labels" / "names.txt").write_text("cat\ndog\nbird\n")
    changed = prepare(cache, source)
    assert changed.path != first.path and not changed.reused
    assert (changed.path / "labels" / "names.txt").read_text() == "cat\ndog\nbird\n"


def test_progress_is_told_and_a_stop_abandons_the_copy(tmp_path, source):
    cache = tmp_path / "cache"
    seen = []
    with pytest.raises(prepared.Stopped):
        prepare(cache, source, stop=lambda: len(seen) > 0, progress=lambda d, t: seen.append(d))
    folder = prepared.node_folder(cache, "node-a")
    assert not [p for p in folder.rglob("*") if p.is_dir() and len(p.name) == 32]
    assert seen[0] == 0


def test_a_missing_source_fails_in_words(tmp_path):
    with pytest.raises(prepared.PrepareFailed, match="does not exist"):
        prepare(tmp_path / "cache", tmp_path / "nowhere")


def test_clean_keeps_held_and_recent_copies(tmp_path, source):
    cache = tmp_path / "cache"
    held = prepare(cache, source)
    later = time.time() + 30 * 86400
    assert prepared.clean(cache, 7 * 86400, now=later) == []  # a live workload holds it
    prepared.release(held)
    assert prepared.clean(cache, 7 * 86400) == []  # used just now
    assert prepared.clean(cache, 7 * 86400, now=later) == [held.path]
    assert not held.path.exists()
