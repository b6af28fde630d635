"""Unix socket paths short enough to connect to.

A socket's path may hold at most 107 bytes, and a tool's lies deep in the runs folder. On
Linux a directory opened once (``O_PATH``) is reachable as ``/proc/self/fd/<n>``, so the
proxy connects through that short name instead. The tools themselves bind relative to
their working folder, where the name is short already.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

LIMIT = 100  # sun_path holds 108 bytes with the final NUL; keep a margin
KEPT = 256  # folders kept open at once (one per tool in use)

_lock = threading.Lock()
_open: OrderedDict[str, int] = OrderedDict()


def reachable(address: str) -> str:
    """A path of ``address`` short enough for ``connect``."""
    if len(os.fsencode(address)) <= LIMIT:
        return address
    folder, name = os.path.split(address)
    with _lock:
        fd = _open.pop(folder, None)
        if fd is None:
            fd = os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        _open[folder] = fd
        while len(_open) > KEPT:
            _old, stale = _open.popitem(last=False)
            os.close(stale)
    return f"/proc/self/fd/{fd}/{name}"


def forget(address: str) -> None:
    """Close the folder kept open for ``address`` (its tool has ended)."""
    folder = os.path.dirname(address)
    with _lock:
        fd = _open.pop(folder, None)
    if fd is not None:
        os.close(fd)
