"""What a backend does around a job's own command, as the contract (base) states it: data
preparation (SPEC J19), lifecycle scripts (SPEC J23), prechecks where the backend runs them
beside the code (SPEC F1), and the notes and results it reports of them. Plain data."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PreparedData:
    """A read-only dataset the job asked to have copied to each of its nodes' fast local
    storage before its code starts (SPEC J19). Every replica mounting ``target`` mounts the
    node's copy, read-only, instead of ``source`` on the shared storage. ``label`` names it
    for people ("cifar10/v2")."""

    source: str
    target: str
    label: str


@dataclass(frozen=True)
class LifecycleScripts:
    """The job's lifecycle scripts (SPEC J23): shell text, run with ``bash -c`` on every
    replica, in its environment, working folder and identity. ``before_start`` runs before
    the replica's command (failing, it fails the workload and the command never runs);
    ``on_failure`` once the workload's command has failed, then ``after_stop`` once it has
    ended for any reason. Each may take ``timeout_seconds``."""

    before_start: str = ""
    after_stop: str = ""
    on_failure: str = ""
    timeout_seconds: int = 300

    def __bool__(self) -> bool:
        return bool(self.before_start or self.after_stop or self.on_failure)


@dataclass(frozen=True)
class NodeChecks:
    """What the checks before a job's code (SPEC F1, seed 004) ask of one node, for a backend
    that runs them beside the code (a cluster: in each pod, before the job's container):
    free GB of the container's root, ``/dev/shm`` and the cache, and on InfiniBand the
    limits. Every replica also checks its peers' names and that it sees its boards."""

    node: str
    root_gb: int = 32
    shm_gb: int = 1
    cache_gb: int = 32
    infiniband: bool = False


@dataclass(frozen=True)
class Checked:
    """One precheck item of one replica as it was measured where the replica runs: seed
    004's keyword (``dns``, ``disk-size root``…), ``ok`` None when it could not be measured
    there (e.g. the image has no resolver tool)."""

    item: str
    node: str
    replica: str
    ok: bool | None
    value: str = ""  # what was found, e.g. "12.3 GB"
    needed: str = ""  # what passes, e.g. "32 GB"


@dataclass(frozen=True)
class Note:
    """Something the backend did for the workload that its owner should hear of, numbered
    from 0 in the order it happened (the console tells each once, in order).

    ``kind`` and the keys of ``facts``:

    * ``preparing`` (node, label, done, total: bytes), ``prepared`` (node, label, total,
      seconds), ``reused`` (node, label, total), ``prepare_failed`` (node, label, error);
    * ``script`` (point: before_start | on_failure | after_stop, node, replica, exit_code,
      seconds, timed_out, last_line).
    """

    number: int
    kind: str
    facts: dict = field(default_factory=dict)
