"""The local runner's state files: written whole, by any number of writers at once."""

from __future__ import annotations

import threading

from resources.backends.local.host import read_json, write_json


def test_threads_of_one_process_write_the_same_file_at_once(tmp_path):
    """A web or worker process may sample a workload's usage in two threads at once (a
    request and the sync): each write is whole, none fails on the other's temporary file."""
    path = tmp_path / "usage.json"
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def writer(number: int) -> None:
        start.wait()
        try:
            for step in range(300):
                write_json(path, {"writer": number, "step": step, "pad": "x" * 2000})
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    seen = []
    while any(t.is_alive() for t in threads):
        if (data := read_json(path)) is not None:
            seen.append(data)  # never half a file: json.load would fail
    for thread in threads:
        thread.join()
    assert errors == []
    assert read_json(path)["step"] == 299
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
