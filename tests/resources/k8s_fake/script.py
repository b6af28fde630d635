"""What a test scripts: how the pods of some Volcano jobs behave (logs, exit, memory, the
scheduler's refusal, a failing image pull, their usage), and what the fake kubelet keeps of
each pod beyond its API object."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Script:
    """How the pods of Volcano jobs whose name starts with a prefix behave."""

    logs: list[str] = field(default_factory=list)
    exit_code: int = 0
    run_seconds: float | None = None  # None: runs until deleted
    oom: bool = False
    unschedulable: str = ""  # the scheduler's message when set: never placed
    image_pull_error: bool = False
    cpu: str = "1500m"
    memory: str = "512Mi"


@dataclass
class PodLife:
    """What the fake kubelet knows of one pod beyond its API object."""

    script: Script
    bound_at: float | None = None
    started_at: float | None = None
    kill_at: float | None = None  # SIGKILL after the grace period of a deletion
    checked: bool = False  # its precheck init container has run
    logs: list[tuple[float, str]] = field(default_factory=list)
