"""What a local replica prints, as the job knows its paths.

The replica's processes run in host folders (see local_runner_layout), so what they print
names this machine's folders; the user knows them by the job's paths. :func:`path_names` is
the one map from the first to the second, for every reader of a replica's output: its log
(:func:`read_log`), the debug terminal's shell and a tool's terminal.
"""

from __future__ import annotations

import os
from pathlib import Path

from resources.backends.base import DEFAULT_PATH, job_paths
from resources.backends.local.host import read_json
from resources.backends.local.layout import job_folders


def path_names(folder: Path, replica: str) -> dict[str, str]:
    """Host folder -> the job's path for it, for replica ``replica`` of the workload kept in
    ``folder``."""
    record = read_json(folder / "workload.json") or {}
    folders = job_folders(record, str(folder), replica, DEFAULT_PATH)
    # Prepared copies of datasets (SPEC J19) are named by their mounts' targets too.
    folders.update((read_json(folder / "state.json") or {}).get("mounted", {}))
    return folders


def read_log(folder: Path, replica: str, offset: int, limit: int) -> tuple[str, int]:
    """Up to ``limit`` bytes of the replica's log from ``offset``, ending at a whole line
    when there is one, and the offset to read from next."""
    try:
        with open(folder / replica / "log.txt", "rb") as handle:
            # Past the end there is nothing; a seek that far may even fail (EINVAL).
            offset = min(offset, os.fstat(handle.fileno()).st_size)
            handle.seek(offset)
            data = handle.read(limit)
    except FileNotFoundError:
        return "", offset
    whole = without_partial_character(data) or data
    if not whole.endswith(b"\n") and b"\n" in whole:
        # Paths are only translated whole: an unfinished line comes with the next read.
        whole = whole[: whole.rindex(b"\n") + 1]
    text = job_paths(whole.decode("utf-8", errors="replace"), path_names(folder, replica))
    return text, offset + len(whole)


def without_partial_character(data: bytes) -> bytes:
    """``data`` without a UTF-8 character cut at its end: the rest comes with the next read,
    so offsets stay byte-accurate and no character is shown broken."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: look further back for the lead
        if byte < 0x80:
            return data
        needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
        return data[:-back] if needed > back else data
    return data
