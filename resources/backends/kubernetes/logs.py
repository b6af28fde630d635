"""The console's copy of a cluster's pod logs: one file per replica, appended to as the pod
writes, so the job page reads a cluster's job exactly as a local one (byte offsets, tails,
downloads) and the log outlives the pod.

A copy asks ``pods/log`` with ``timestamps=true`` from the second of the last line it kept
(``sinceTime`` has whole seconds) and skips what it already has: lines before the last kept
timestamp, and as many lines at that very timestamp as it kept. A last line without its
newline is left for the next copy, so a line is never split or doubled.
"""

from __future__ import annotations

import fcntl
import json
import logging
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

from resources.backends.base import BackendError
from resources.backends.kubernetes.api import Api, ApiAnswer

# A copy reads at most this much per request; a chatty pod catches up over several copies.
LIMIT_BYTES = 4 * 2**20
LOG_SECONDS = 1.0  # a live pod's log is copied at most this often

logger = logging.getLogger(__name__)


class LogStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _paths(self, workload: str, replica: str) -> tuple[Path, Path]:
        folder = self.root / workload
        return folder / f"{replica}.log", folder / f"{replica}.mark"

    @contextmanager
    def copying(self, workload: str, replica: str):
        """Held while one process copies a replica's log (the web and the worker both do)."""
        _log, mark = self._paths(workload, replica)
        mark.parent.mkdir(parents=True, exist_ok=True)
        with (mark.parent / f"{replica}.lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def due(self, workload: str, replica: str, seconds: float) -> bool:
        """Worth copying: not finished, and not copied within ``seconds``."""
        _log, mark = self._paths(workload, replica)
        try:
            data = json.loads(mark.read_text())
        except (OSError, ValueError):
            return True
        return not data.get("final") and time.time() - mark.stat().st_mtime >= seconds

    def mark(self, workload: str, replica: str) -> tuple[str, int]:
        """(timestamp of the last line kept, how many lines kept at that timestamp)."""
        _log, mark = self._paths(workload, replica)
        try:
            data = json.loads(mark.read_text())
            return str(data["last"]), int(data["same"])
        except (OSError, ValueError, KeyError, TypeError):
            return "", 0

    def since(self, workload: str, replica: str) -> str:
        """The ``sinceTime`` to ask for: the last kept line's second ("" for everything)."""
        last, _same = self.mark(workload, replica)
        return f"{last[:19]}Z" if last else ""

    def add(self, workload: str, replica: str, text: str, *, final: bool = False) -> int:
        """Keep the new lines of an answer with timestamps; returns the bytes added."""
        last, same = self.mark(workload, replica)
        lines = text.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n") and not final:
            lines.pop()  # the pod is still writing it
        kept: list[str] = []
        seen = 0  # lines at ``last`` met in this answer
        for line in lines:
            stamp, _, rest = line.partition(" ")
            if not stamp[:4].isdigit():  # not a timestamped line: keep it as it is
                kept.append(line)
            elif stamp < last:
                continue
            elif stamp == last:
                seen += 1
                if seen > same:
                    same = seen
                    kept.append(rest)
            else:
                last, same, seen = stamp, 1, 1
                kept.append(rest)
        log, mark = self._paths(workload, replica)
        log.parent.mkdir(parents=True, exist_ok=True)
        data = "".join(kept)
        if data and not data.endswith("\n") and final:
            data += "\n"
        with log.open("a", encoding="utf-8") as handle:
            handle.write(data)
        mark.write_text(json.dumps({"last": last, "same": same, "final": final}))
        return len(data.encode())

    def read(self, workload: str, replica: str, offset: int, limit: int) -> tuple[str, int]:
        log, _mark = self._paths(workload, replica)
        try:
            with log.open("rb") as handle:
                handle.seek(max(0, offset))
                data = handle.read(max(0, limit))
        except FileNotFoundError:
            return "", offset
        # Never end inside a UTF-8 character: stop before an incomplete one.
        text = data.decode("utf-8", "ignore")
        used = len(text.encode())
        return text, offset + used

    def size(self, workload: str, replica: str) -> int:
        log, _mark = self._paths(workload, replica)
        try:
            return log.stat().st_size
        except FileNotFoundError:
            return 0

    def forget(self, workload: str) -> None:
        shutil.rmtree(self.root / workload, ignore_errors=True)


def copy_pod_logs(
    api: Api, store: LogStore, namespace: str, workload_id: str, replicas: list[str], final: bool
) -> None:
    """Bring the console's copy of these replicas' logs up to date (one request each);
    ``final``: the pods have ended, this is the last copy."""
    for replica in replicas:
        if not final and not store.due(workload_id, replica, LOG_SECONDS):
            continue
        pod = f"{workload_id}-{replica}-0"  # Volcano's name: <job>-<task>-<index>
        with store.copying(workload_id, replica):
            try:
                text = api.request(
                    "GET",
                    f"/api/v1/namespaces/{namespace}/pods/{pod}/log",
                    "read pod logs",
                    query={
                        "container": "main",
                        "timestamps": "true",
                        "sinceTime": store.since(workload_id, replica),
                        "limitBytes": LIMIT_BYTES,
                    },
                    text=True,
                    timeout=min(api.timeout, 5),
                )
            except ApiAnswer as error:
                if error.status in (400, 404):  # not started yet, or gone
                    continue
                logger.info("cannot copy the log of %s: %s", pod, error)
                continue
            except BackendError as error:
                logger.info("cannot copy the log of %s: %s", pod, error)
                continue
            store.add(workload_id, replica, str(text), final=final)
