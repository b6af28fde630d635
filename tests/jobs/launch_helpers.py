"""The launch tests' request: a job named demo with the seeds' training command, in any mode,
with whatever a test overrides."""

from __future__ import annotations

from jobs.launch import LaunchRequest

JOB = "demo"
TRAIN = "python /workspace/algorithm/train.py"


def make(mode: str, command: str = TRAIN, **overrides) -> LaunchRequest:
    fields = {
        "job_name": JOB,
        "mode": mode,
        "command": command,
        "cpu_millicores": 8000,
        "memory_mib": 32768,
        "port": 2222,
        "node_count": 2,
        "boards": 4,
    }
    fields.update(overrides)
    return LaunchRequest(**fields)
