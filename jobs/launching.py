"""The effective launch per node for the detail page (SPEC L, O2).

Uses the launch-plan package when it is present; until a job has a placement the plan is
drawn for its first spec, with the host names it will get.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobs.models import Job


@dataclass(frozen=True)
class NodeLaunch:
    role: str
    index: int
    hostname: str
    command: str
    env: list[tuple[str, str]]
    files: list[tuple[str, str]]
    runs_entry: bool = True

    @property
    def words(self) -> list[str]:
        """The command cut at its spaces, drawn as unbreakable words so that a narrow box
        wraps between words, never after the first "-" of "--option"."""
        return self.command.split(" ")


def effective_launch(job: Job, subtask=None) -> list[NodeLaunch]:
    try:
        from jobs.launch_request import plan_for
    except ImportError:  # the launch-plan package is not there yet: show what was typed
        command = job.command or (subtask.command if subtask else "")
        return [
            NodeLaunch("worker", i, f"{job.name}-worker-{i}", command, [], [])
            for i in range(job.nodes)
        ]
    try:
        plan = plan_for(job, subtask)
    except (ValueError, IndexError) as exc:
        # A job saved before a rule existed (or demo data) may not plan: say so, show it.
        command = job.command or (subtask.command if subtask else "")
        return [NodeLaunch("worker", 0, f"{job.name}-worker-0", f"{command}  # {exc}", [], [])]
    return [
        NodeLaunch(
            role=replica.role,
            index=replica.index,
            hostname=replica.hostname,
            command=replica.display_command(),
            env=sorted(replica.env.items()),
            files=sorted(replica.files.items()),
            runs_entry=getattr(replica, "runs_entry", True),
        )
        for replica in plan.replicas
    ]
