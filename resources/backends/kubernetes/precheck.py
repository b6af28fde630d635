"""Seed 004's prechecks in the pod (SPEC F1): one init container, ``precheck``, runs first in
every pod of the job, in the job's own image and identity, with nothing installed into it: a
POSIX shell script using what images have (``df``, ``awk``, ``getent`` or ``nslookup``).

It checks that every replica's name resolves (``<host>.<job>``, as the plan's hostfiles say;
the peers' records appear as their pods start, so it waits up to the peer timeout), the free
space of the container's root, ``/dev/shm`` and the node's cache (an ``emptyDir`` at
``/cache``: the node's own disk) against the pool's thresholds, the four limits on
InfiniBand nodes, and that the boards the pod was given are visible. It gets the boards it
counts: the same resources as the job's container.

Each item is one line, ``item<TAB>name<TAB>passed|failed|unmeasured<TAB>value<TAB>needed``,
printed (the seed's "item" log keyword) and written as the container's termination message,
which the API returns with the pod. A failed item ends the container with 1, so the job's
container never starts; the pod fails and the console reads why from that message.
"""

from __future__ import annotations

from resources.backends.base import Checked, NodeChecks, ReplicaSpec, Workload

NAME = "precheck"
CACHE_TARGET = "/cache"
CACHE_VOLUME = "precheck-cache"
# The container's termination message is at most 4096 bytes: ample for a few lines.
SCRIPT = r"""
out=${CONSOLE_PRECHECK_OUT:-/dev/termination-log}
: > "$out" 2>/dev/null || out=/dev/null
failed=0
say() {
  line=$(printf 'item\t%s\t%s\t%s\t%s' "$1" "$2" "$3" "$4")
  echo "$line"
  echo "$line" >> "$out"
  if [ "$2" = failed ]; then failed=1; fi
}
resolves() {
  if command -v getent >/dev/null 2>&1; then getent hosts "$1" >/dev/null 2>&1
  else nslookup "$1" >/dev/null 2>&1; fi
}
if ! command -v getent >/dev/null 2>&1 && ! command -v nslookup >/dev/null 2>&1; then
  say dns unmeasured "no getent or nslookup in the image" ""
else
  deadline=$(( $(date +%s) + ${CONSOLE_PRECHECK_PEER_SECONDS:-60} ))
  missing=$CONSOLE_PRECHECK_PEERS
  while :; do
    left=""
    for name in $missing; do resolves "$name" || left="$left $name"; done
    missing=$(echo $left)
    if [ -z "$missing" ] || [ "$(date +%s)" -ge "$deadline" ]; then break; fi
    sleep 1
  done
  if [ -z "$missing" ]; then say dns passed "" ""; else say dns failed "$missing" ""; fi
fi
disk() {
  kb=$(df -Pk "$2" 2>/dev/null | awk 'NR == 2 {print $4}')
  if [ -z "$kb" ]; then say "$1" unmeasured "" "$3 GB"; return; fi
  gb=$(awk -v k="$kb" 'BEGIN {printf "%.1f", k * 1024 / 1000000000}')
  if awk -v k="$kb" -v n="$3" 'BEGIN {exit !(k * 1024 / 1000000000 > n)}'; then
    say "$1" passed "$gb GB" "$3 GB"
  else
    say "$1" failed "$gb GB" "$3 GB"
  fi
}
disk "disk-size root" / "$CONSOLE_PRECHECK_ROOT_GB"
disk "disk-size shm" /dev/shm "$CONSOLE_PRECHECK_SHM_GB"
disk "disk-size cache" "${CONSOLE_PRECHECK_CACHE_DIR:-/cache}" "$CONSOLE_PRECHECK_CACHE_GB"
if [ "${CONSOLE_PRECHECK_ULIMIT:-0}" = 1 ]; then
  low=""
  read=0
  limit() {
    value=$(ulimit "$2" 2>/dev/null) || value=""
    if [ -z "$value" ] && [ -n "$4" ]; then value=$(ulimit "$4" 2>/dev/null) || value=""; fi
    [ -n "$value" ] || return 0
    read=1
    if [ "$value" != unlimited ] && [ "$value" -le "$3" ]; then low="${low:+$low, }$1"; fi
  }
  limit "max locked memory" -l 16000
  limit "open files" -n 1000000
  limit "stack size" -s 8000
  limit "max user processes" -u 1000000 -p
  if [ "$read" = 0 ]; then say ulimit unmeasured "" ""
  elif [ -n "$low" ]; then say ulimit failed "$low" ""
  else say ulimit passed "" ""; fi
fi
if [ "${CONSOLE_PRECHECK_BOARDS:-0}" -gt 0 ]; then
  if command -v nvidia-smi >/dev/null 2>&1; then
    seen=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  else
    seen=$(ls -d /dev/nvidia[0-9]* /dev/davinci[0-9]* 2>/dev/null | wc -l)
  fi
  seen=$(echo $seen)
  if [ "$seen" -ge "$CONSOLE_PRECHECK_BOARDS" ]; then
    say gpu-check passed "$seen" "$CONSOLE_PRECHECK_BOARDS"
  else
    say gpu-check failed "$seen" "$CONSOLE_PRECHECK_BOARDS"
  fi
fi
exit $failed
""".strip()
_OK = {"passed": True, "failed": False, "unmeasured": None}


def peers(workload: Workload) -> list[str]:
    """Every replica's name as its peers use it: ``<host>.<job>`` (the job's Service)."""
    return [f"{replica.name}.{workload.id}" for replica in workload.replicas]


def container(workload: Workload, replica: ReplicaSpec, resources: dict) -> dict | None:
    """The init container checking ``replica``'s node, or None when the workload asks for
    no prechecks there."""
    wanted = next((n for n in workload.prechecks if n.node == replica.node), None)
    if wanted is None:
        return None
    env = environment(workload, replica, wanted)
    return {
        "name": NAME,
        "image": workload.image,
        "command": ["/bin/sh", "-c", SCRIPT],
        "env": [{"name": name, "value": value} for name, value in env.items()],
        "resources": resources,
        "volumeMounts": [
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": CACHE_VOLUME, "mountPath": CACHE_TARGET},
        ],
        # A failed container's message falls back to its log's end: the same lines.
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }


def environment(workload: Workload, replica: ReplicaSpec, wanted: NodeChecks) -> dict[str, str]:
    return {
        "CONSOLE_PRECHECK_PEERS": " ".join(peers(workload)),
        "CONSOLE_PRECHECK_PEER_SECONDS": str(workload.peer_timeout_seconds),
        "CONSOLE_PRECHECK_ROOT_GB": str(wanted.root_gb),
        "CONSOLE_PRECHECK_SHM_GB": str(wanted.shm_gb),
        "CONSOLE_PRECHECK_CACHE_GB": str(wanted.cache_gb),
        "CONSOLE_PRECHECK_ULIMIT": "1" if wanted.infiniband else "0",
        "CONSOLE_PRECHECK_BOARDS": str(len(replica.slots)),
    }


def volumes() -> list[dict]:
    return [{"name": CACHE_VOLUME, "emptyDir": {}}]


def parse(text: str, node: str, replica: str) -> list[Checked]:
    """The items of one precheck's output (its termination message or log); lines that are
    not items are ignored."""
    found = []
    for line in text.split("\n"):  # only the script's own line ends (a value may hold others)
        fields = line.split("\t")
        if len(fields) != 5 or fields[0] != "item" or fields[2] not in _OK:
            continue
        _, item, result, value, needed = fields
        found.append(Checked(item[:40], node, replica, _OK[result], value[:200], needed[:40]))
    return found


def ran(pod: dict) -> dict | None:
    """The precheck container's end in ``pod`` (its ``terminated`` state), or None while it
    has not ended (or the pod has none)."""
    for status in (pod.get("status") or {}).get("initContainerStatuses") or []:
        if status.get("name") != NAME:
            continue
        return (status.get("state") or {}).get("terminated") or (status.get("lastState") or {}).get(
            "terminated"
        )
    return None


def results(pods: list[dict], task_of) -> tuple[Checked, ...]:
    """Every item the pods' prechecks reported, pod by pod (``task_of``: a pod's replica)."""
    found: list[Checked] = []
    for pod in pods:
        ended = ran(pod)
        if ended is None:
            continue
        node = (pod.get("spec") or {}).get("nodeName", "")  # scheduled: it ran there
        found += parse(ended.get("message") or "", node, task_of(pod))
    return tuple(found)
