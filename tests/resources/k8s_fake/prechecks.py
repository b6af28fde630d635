"""What the fake kubelet makes of a pod's ``precheck`` init container (SPEC F1): the items its
environment asks for, each passed unless a test scripted otherwise for the pod's node, as the
lines the real script writes to its termination message; exit 1 when one failed."""

from __future__ import annotations

from tests.resources.k8s_fake import objects

NAME = "precheck"
FREE = "512.0 GB"  # what every fake node's disks have free


def container(pod: dict) -> dict | None:
    return next((c for c in pod["spec"].get("initContainers") or () if c.get("name") == NAME), None)


def run(pod: dict, scripted: dict[str, dict[str, tuple[bool | None, str]]]) -> tuple[int, str]:
    """(exit code, termination message) of the pod's precheck on its node. ``scripted``:
    node -> item -> (ok, value) of the items a test made fail (or unmeasured)."""
    env = {e["name"]: e.get("value", "") for e in container(pod).get("env") or ()}
    mine = scripted.get(pod["spec"].get("nodeName", ""), {})
    lines, failed = [], False

    def item(name: str, value: str, needed: str) -> None:
        nonlocal failed
        ok, value = mine.get(name, (True, value))
        result = {True: "passed", False: "failed", None: "unmeasured"}[ok]
        failed = failed or ok is False
        lines.append("\t".join(("item", name, result, value, needed)))

    item("dns", "", "")
    for disk in ("root", "shm", "cache"):
        item(f"disk-size {disk}", FREE, f"{env.get(f'CONSOLE_PRECHECK_{disk.upper()}_GB')} GB")
    if env.get("CONSOLE_PRECHECK_ULIMIT") == "1":
        item("ulimit", "", "")
    boards = env.get("CONSOLE_PRECHECK_BOARDS", "0")
    if boards != "0":
        item("gpu-check", boards, boards)
    return (1 if failed else 0), "\n".join(lines) + "\n"


def apply(pod: dict, scripted: dict, started: str, finished: str) -> bool:
    """Run the pod's precheck into its status; False when it failed, and the pod with it
    (its container waits for an init that never ends well)."""
    code, message = run(pod, scripted)
    pod["status"]["initContainerStatuses"] = [status(code, message, started, finished)]
    if code == 0:
        return True
    pod["status"] |= {
        "phase": "Failed",
        "conditions": objects.pod_conditions(True, False, reason="PodFailed"),
        "containerStatuses": [
            objects.container_status(pod, {"waiting": {"reason": "PodInitializing"}})
        ],
    }
    return False


def status(code: int, message: str, started: str, finished: str) -> dict:
    return {
        "name": NAME,
        "state": {
            "terminated": {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "message": message,
                "startedAt": started,
                "finishedAt": finished,
            }
        },
        "lastState": {},
        "ready": code == 0,
        "restartCount": 0,
    }
