"""Data preparation (SPEC J19) and lifecycle scripts (SPEC J23) as Kubernetes renders them,
from the same Workload fields the local backend reads (pure, used by k8s_render).

* Data preparation: one init container, ``prepare-data``, in the job's image and identity,
  copies each dataset from the storage (mounted read-only) into an ``emptyDir`` of the pod:
  the node's own disk. The main container mounts that copy read-only at the dataset's target.
  The pod's copy lives as long as the pod: keeping copies on the node for the admin's days
  and reusing them needs a host folder per cluster, which the cluster settings do not have
  yet (the local backend keeps and reuses them).
* Lifecycle scripts: the container's command is wrapped in a small bash script that runs
  "before start" (a failure ends the container with its code: the command never runs), the
  command, then "on failure" (when the command failed and was not stopped) and "after stop"
  with the headings the local backend writes, each under ``timeout``. The pod's graceful
  time grows by the script timeout so that "after stop" may run after a SIGTERM.
"""

from __future__ import annotations

from resources.backends.base import ReplicaSpec, Workload

SOURCE_ROOT = "/console/source"
PREPARED_ROOT = "/console/prepared"

WRAPPER = r"""
run_script() {
  echo "── $1 script ──"
  began=$(date +%s)
  timeout -s KILL "$CONSOLE_SCRIPT_TIMEOUT" bash -c "$2"
  code=$?
  echo "── end of $1 script (exit $code, $(( $(date +%s) - began )) s) ──"
  return $code
}
if [ -n "$CONSOLE_SCRIPT_BEFORE_START" ]; then
  run_script "before start" "$CONSOLE_SCRIPT_BEFORE_START" || exit $?
fi
stopped=0
"$@" &
child=$!
trap 'stopped=1; kill -TERM "$child" 2>/dev/null' TERM INT
wait "$child"
code=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done
trap - TERM INT
if [ "$code" -ne 0 ] && [ "$stopped" -eq 0 ] && [ -n "$CONSOLE_SCRIPT_ON_FAILURE" ]; then
  run_script "on failure" "$CONSOLE_SCRIPT_ON_FAILURE"
fi
if [ -n "$CONSOLE_SCRIPT_AFTER_STOP" ]; then
  run_script "after stop" "$CONSOLE_SCRIPT_AFTER_STOP"
fi
exit "$code"
""".strip()


def prepared_targets(workload: Workload, replica: ReplicaSpec) -> dict[str, int]:
    """Target -> index of the workload's prepared datasets this replica mounts."""
    mounted = {str(target) for _source, target, _ro in replica.mounts}
    return {d.target: i for i, d in enumerate(workload.prepare_data) if d.target in mounted}


def prepare_container(workload: Workload, replica: ReplicaSpec, storage_mount) -> dict | None:
    """The init container copying the replica's prepared datasets, or None.
    ``storage_mount(source, path)`` is the storage volume's mount of ``source`` at ``path``."""
    targets = prepared_targets(workload, replica)
    if not targets:
        return None
    mounts, copies = [], []
    for data in workload.prepare_data:
        if data.target not in targets:
            continue
        index = targets[data.target]
        mounts.append(storage_mount(data.source, f"{SOURCE_ROOT}/{index}"))
        mounts.append({"name": f"prepared-{index}", "mountPath": f"{PREPARED_ROOT}/{index}"})
        copies.append(
            f'echo "Preparing data: {index}"; '
            f"cp -R {SOURCE_ROOT}/{index}/. {PREPARED_ROOT}/{index}/"
        )
    return {
        "name": "prepare-data",
        "image": workload.image,
        "command": ["/bin/sh", "-c", "set -e; " + "; ".join(copies)],
        "volumeMounts": mounts,
    }


def prepared_volumes(workload: Workload, replica: ReplicaSpec) -> list[dict]:
    return [
        {"name": f"prepared-{index}", "emptyDir": {}}
        for index in sorted(prepared_targets(workload, replica).values())
    ]


def wrapped(workload: Workload, command: list[str]) -> list[str]:
    """The container's command, with the lifecycle scripts around it when there are any."""
    if not workload.scripts:
        return command
    return ["/bin/bash", "-c", WRAPPER, "console-lifecycle", *command]


def script_env(workload: Workload) -> list[dict]:
    scripts = workload.scripts
    if not scripts:
        return []
    values = {
        "CONSOLE_SCRIPT_BEFORE_START": scripts.before_start,
        "CONSOLE_SCRIPT_ON_FAILURE": scripts.on_failure,
        "CONSOLE_SCRIPT_AFTER_STOP": scripts.after_stop,
        "CONSOLE_SCRIPT_TIMEOUT": str(scripts.timeout_seconds),
    }
    return [{"name": name, "value": value} for name, value in values.items()]


def graceful_seconds(workload: Workload) -> int:
    extra = workload.scripts.timeout_seconds if workload.scripts.after_stop else 0
    return workload.graceful_seconds + extra
