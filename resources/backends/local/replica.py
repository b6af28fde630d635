"""One replica as its supervisor follows it: where it runs, its process, how it ended, and its
record in the workload's state.json."""

from __future__ import annotations

from pathlib import Path


class Replica:
    def __init__(self, spec: dict):
        self.spec = spec
        self.name: str = spec["name"]
        self.label: str = spec["label"]
        self.dir = Path(spec["dir"])
        self.pid: int | None = None
        self.process: dict | None = None  # {"pid", "start"}: who to signal, safely
        self.state = "pending"
        self.exit_code: int | None = None
        self.reason = ""
        self.signalled = False  # we sent it SIGTERM: a non-zero end is then "stopped"
        self.killed = False  # we had to SIGKILL it
        self.ended_at = 0.0

    @property
    def alive(self) -> bool:
        return self.pid is not None and self.exit_code is None

    def record(self) -> dict:
        return {
            "name": self.name,
            "state": self.state,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "process": self.process,
        }
