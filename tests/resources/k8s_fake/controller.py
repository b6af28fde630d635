"""What runs behind the fake API server, one tick at a time (under the store's lock): the
Volcano job controller (PodGroup, pods, the job's phases and policies), a gang scheduler
(scheduler.py), the kubelets (pulling, starting, running, ending and killing containers as
scripted), and the garbage collector (ownerReferences, foreground and background deletion)."""

from __future__ import annotations

from tests.resources.k8s_fake import objects, prechecks
from tests.resources.k8s_fake.objects import stamp
from tests.resources.k8s_fake.scheduler import ENDED, GangScheduler
from tests.resources.k8s_fake.script import PodLife, Script
from tests.resources.k8s_fake.store import Store

CREATE_SECONDS = 0.2  # ContainerCreating before a bound pod runs (not scaled)
PULL_BACKOFF_SECONDS = 1.0  # ErrImagePull and ImagePullBackOff alternate this often
FINISHED = frozenset({"Completed", "Failed", "Aborted", "Terminated"})


class Controller:
    def __init__(self, store: Store, nodes: list[dict]) -> None:
        self.store = store
        self.nodes = nodes
        self.scripts: list[tuple[str, Script]] = []
        self.lives: dict[str, PodLife] = {}  # by pod uid
        self.time_scale = 1.0
        # Jobs with nothing to do until someone acts on them (running until deleted): a
        # fake holding thousands of them for a benchmark then costs little CPU per tick.
        self.asleep: set[str] = set()
        self._seen = -1  # the store's version after the last tick
        # node -> precheck item -> (ok, value): what a test made the pods' prechecks find.
        self.precheck_results: dict[str, dict[str, tuple[bool | None, str]]] = {}
        self.scheduler = GangScheduler(store, nodes, self.write)

    def script_for(self, name: str) -> Script:
        found = [s for prefix, s in self.scripts if name.startswith(prefix)]
        return found[-1] if found else Script()

    def write(self, obj: dict) -> None:
        self.store.bump(obj)

    # --- one tick -----------------------------------------------------------------------

    def tick(self, now: float) -> None:
        if self.store.version == self._seen and len(self.asleep) >= len(self.store.items["jobs"]):
            return  # nothing written since, nothing waiting on a clock
        jobs = self.store.of("jobs")
        pods_by_owner: dict[str, list[dict]] = {}
        for pod in self.store.of("pods"):
            for ref in pod["metadata"].get("ownerReferences") or ():
                pods_by_owner.setdefault(ref["uid"], []).append(pod)
        self.scheduler.new_tick()
        for job in jobs:
            uid = job["metadata"]["uid"]
            if uid in self.asleep:
                continue
            before = self.store.version
            pods = pods_by_owner.get(uid, [])
            self.job(job, pods, now)
            if self.store.version == before and self.steady(job, pods):
                self.asleep.add(uid)
        if self.store.version != self._seen:
            self.collect_garbage(now)
        self._seen = self.store.version

    def wake(self, uid: str) -> None:
        self.asleep.discard(uid)

    def steady(self, job: dict, pods: list[dict]) -> bool:
        """Running, and nothing will change until someone acts on it."""
        if job["metadata"].get("deletionTimestamp") or not pods:
            return False
        if (job["status"].get("state") or {}).get("phase") != "Running":
            return False
        for pod in pods:
            life = self.lives.get(pod["metadata"]["uid"])
            if (
                life is None
                or pod["status"]["phase"] != "Running"
                or life.kill_at is not None
                or life.script.run_seconds is not None
            ):
                return False
        return True

    def job(self, job: dict, pods: list[dict], now: float) -> None:
        metadata, spec = job["metadata"], job["spec"]
        status = job.setdefault("status", {})
        for pod in pods:
            self.kubelet(pod, now)
        if metadata.get("deletionTimestamp"):
            return  # Volcano leaves a deleted job to the garbage collector
        phase = (status.get("state") or {}).get("phase")
        if phase is None:
            status["minAvailable"] = spec.get("minAvailable", 0)
            self.move(job, "Pending", now)
            return
        if phase in FINISHED:
            return
        group = self.store.get("podgroups", metadata["namespace"], objects.podgroup_name(job))
        if group is None:
            self.store.add("podgroups", objects.podgroup(job), now)
            return
        if group["status"]["phase"] == "Pending":  # enqueue: the queue has room
            group["status"]["phase"] = "Inqueue"
            self.write(group)
            return
        if not pods and phase == "Pending":
            for task in spec.get("tasks") or []:
                for index in range(task.get("replicas", 1)):
                    pod = self.store.add("pods", objects.pod(job, task, index), now)
                    life = PodLife(self.script_for(metadata["name"]))
                    self.lives[pod["metadata"]["uid"]] = life
            return
        self.scheduler.schedule(job, group, pods, self.lives)
        self.follow(job, group, pods, now)

    def move(self, job: dict, phase: str, now: float, reason: str = "", message: str = ""):
        status = job["status"]
        state = {"phase": phase, "lastTransitionTime": stamp(now)}
        if reason:
            state["reason"] = reason
        if message:
            state["message"] = message
        status["state"] = state
        status.setdefault("conditions", []).append(
            {"status": phase, "lastTransitionTime": stamp(now)}
        )
        self.write(job)

    # --- the job controller's view of its pods --------------------------------------------

    def follow(self, job: dict, group: dict, pods: list[dict], now: float) -> None:
        status = job["status"]
        phase = status["state"]["phase"]
        counts = {"pending": 0, "running": 0, "succeeded": 0, "failed": 0, "terminating": 0}
        tasks: dict[str, dict[str, dict[str, int]]] = {}
        for pod in pods:
            pod_phase = pod["status"]["phase"]
            if pod["metadata"].get("deletionTimestamp") and pod_phase not in ENDED:
                counts["terminating"] += 1
            else:
                counts[pod_phase.lower()] = counts.get(pod_phase.lower(), 0) + 1
            task = pod["metadata"]["labels"]["volcano.sh/task-spec"]
            by_phase = tasks.setdefault(task, {"phase": {}})["phase"]
            by_phase[pod_phase] = by_phase.get(pod_phase, 0) + 1
        seen = {key: status.get(key, 0) for key in counts} | {
            "taskStatusCount": status.get("taskStatusCount")
        }
        if seen != counts | {"taskStatusCount": tasks}:
            status.update(counts, taskStatusCount=tasks)
            self.write(job)
        self.follow_group(group, counts)
        wanted = job["spec"].get("minAvailable", 0)
        live = counts["pending"] + counts["running"] + counts["terminating"]
        # Volcano's states (pkg/controllers/job/state): Pending starts running once the gang
        # has started; a policy's action kills the live pods (ended ones are kept) and the
        # job ends when none is left; without one, the job ends with its last pod.
        started = counts["running"] + counts["succeeded"] + counts["failed"]
        if phase == "Pending" and started >= max(wanted, 1):
            self.move(job, "Running", now)
        elif phase == "Running":
            failed = [p for p in pods if p["status"]["phase"] == "Failed"]
            # Deleted by someone else than Volcano (which only deletes when it moves the job
            # out of Running): force-deleted, or evicted. Volcano's PodEvicted event.
            evicted = [p for p in pods if p["metadata"].get("deletionTimestamp")]
            replicas = sum(t.get("replicas", 1) for t in job["spec"].get("tasks") or [])
            gone = bool(evicted) or len(pods) < replicas
            if (gone and self.action(job, None, "PodEvicted") == "AbortJob") or (
                failed and self.action(job, failed[0], "PodFailed") == "AbortJob"
            ):
                self.move(job, "Aborting", now)
                self.kill(pods, now)
            elif self.completed_task(job, pods):
                self.move(job, "Completing", now)
                self.kill(pods, now)
            elif pods and not live:
                self.move(job, "Completed" if counts["succeeded"] >= wanted else "Failed", now)
        elif phase in ("Aborting", "Completing", "Terminating") and not live:
            self.move(
                job,
                {"Aborting": "Aborted", "Completing": "Completed", "Terminating": "Terminated"}[
                    phase
                ],
                now,
            )

    def follow_group(self, group: dict, counts: dict[str, int]) -> None:
        status = group["status"]
        phase = status["phase"]
        if counts["running"] >= max(group["spec"].get("minMember", 0), 1) and phase != "Running":
            phase = "Running"
            status["conditions"] = [
                c for c in status.get("conditions") or () if c["type"] != "Unschedulable"
            ] + [
                objects.podgroup_condition(
                    "Scheduled", "tasks in gang are ready to be scheduled", ""
                )
            ]
        wanted = {
            "phase": phase,
            "running": counts["running"],
            "succeeded": counts["succeeded"],
            "failed": counts["failed"],
        }
        if any(status.get(key, 0) != value for key, value in wanted.items()):
            status.update(wanted)
            self.write(group)

    @staticmethod
    def action(job: dict, pod: dict | None, event: str) -> str:
        """The action of the job's policy for ``event`` on ``pod`` (None: a pod that is gone,
        only the job's own policies apply)."""
        task = pod["metadata"]["labels"]["volcano.sh/task-spec"] if pod else None
        policies = [
            *(t.get("policies") or [] for t in job["spec"].get("tasks") or [] if t["name"] == task),
            job["spec"].get("policies") or [],
        ]
        for policy in (p for group in policies for p in group):
            if policy.get("event") == event or event in (policy.get("events") or ()):
                return policy.get("action", "")
        return ""

    @staticmethod
    def completed_task(job: dict, pods: list[dict]) -> str:
        for task in job["spec"].get("tasks") or []:
            actions = {
                p.get("action")
                for p in task.get("policies") or ()
                if p.get("event") == "TaskCompleted"
            }
            mine = [
                p for p in pods if p["metadata"]["labels"]["volcano.sh/task-spec"] == task["name"]
            ]
            if (
                "CompleteJob" in actions
                and mine
                and all(p["status"]["phase"] == "Succeeded" for p in mine)
            ):
                return task["name"]
        return ""

    def kill(self, pods: list[dict], now: float) -> None:
        """Delete the live pods (ended ones are kept, as Volcano's soft retain does)."""
        for pod in pods:
            if pod["status"]["phase"] not in ENDED:
                self.delete_pod(pod, now)

    def delete_pod(self, pod: dict, now: float, grace: int | None = None) -> None:
        metadata = pod["metadata"]
        if metadata.get("deletionTimestamp"):
            return
        if grace is None:
            grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
        for ref in metadata.get("ownerReferences") or ():
            self.wake(ref["uid"])
        metadata["deletionTimestamp"] = stamp(now + grace)
        metadata["deletionGracePeriodSeconds"] = grace
        life = self.lives.get(metadata["uid"])
        if life is not None:
            life.kill_at = now + grace * self.time_scale
        self.write(pod)

    # --- the kubelet ------------------------------------------------------------------------

    def kubelet(self, pod: dict, now: float) -> None:
        life = self.lives.get(pod["metadata"]["uid"])
        status = pod["status"]
        if life is None or not pod["spec"].get("nodeName") or status["phase"] in ENDED:
            return
        script = life.script
        if life.bound_at is None:
            life.bound_at = now
            status["startTime"] = stamp(now)
        if life.started_at is None:
            if script.image_pull_error:
                turn = int((now - life.bound_at) / PULL_BACKOFF_SECONDS) % 2
                image = pod["spec"]["containers"][0].get("image", "")
                reason, message = (
                    ("ErrImagePull", f'failed to pull and unpack image "{image}": not found')
                    if turn == 0
                    else ("ImagePullBackOff", f'Back-off pulling image "{image}"')
                )
                self.wait(pod, reason, message)
            elif now - life.bound_at < CREATE_SECONDS:
                self.wait(pod, "ContainerCreating", "")
            elif self.prechecked(pod, life, now):
                self.start(pod, life, now)
            return
        if life.kill_at is not None and now >= life.kill_at:
            self.end(pod, life, 137, "Error", now)
        elif script.run_seconds is not None and (
            now - life.started_at >= script.run_seconds * self.time_scale
        ):
            code = 137 if script.oom else script.exit_code
            reason = "OOMKilled" if script.oom else ("Completed" if code == 0 else "Error")
            self.end(pod, life, code, reason, now)

    def prechecked(self, pod: dict, life: PodLife, now: float) -> bool:
        """Run the pod's precheck init container once (k8s_fake.prechecks); False when it
        failed: the pod fails with it, its container never started."""
        if life.checked or prechecks.container(pod) is None:
            return True
        life.checked = True
        if prechecks.apply(pod, self.precheck_results, stamp(life.bound_at), stamp(now)):
            return True
        self.write(pod)
        return False

    def wait(self, pod: dict, reason: str, message: str) -> None:
        waiting = {"reason": reason, **({"message": message} if message else {})}
        current = (pod["status"].get("containerStatuses") or [{}])[0].get("state")
        if current != {"waiting": waiting}:
            pod["status"]["containerStatuses"] = [
                objects.container_status(pod, {"waiting": waiting})
            ]
            self.write(pod)

    def start(self, pod: dict, life: PodLife, now: float) -> None:
        life.started_at = now
        life.logs = [(now + i * 1e-3, line) for i, line in enumerate(life.script.logs)]
        pod["status"] |= {
            "phase": "Running",
            "conditions": objects.pod_conditions(True, True),
            "podIP": "10.244.1.17",
            "podIPs": [{"ip": "10.244.1.17"}],
            "containerStatuses": [
                objects.container_status(pod, {"running": {"startedAt": stamp(now)}}, ready=True)
            ],
        }
        self.write(pod)

    def end(self, pod: dict, life: PodLife, code: int, reason: str, now: float) -> None:
        previous = pod["status"]["containerStatuses"][0]
        terminated = {
            "exitCode": code,
            "reason": reason,
            "startedAt": stamp(life.started_at),
            "finishedAt": stamp(now),
            "containerID": previous.get("containerID", ""),
        }
        failed = code != 0
        # Why the cluster took it away (eviction) outlives its end, as the API keeps it.
        disruption = [
            c for c in pod["status"].get("conditions") or () if c["type"] == "DisruptionTarget"
        ]
        pod["status"] |= {
            "phase": "Failed" if failed else "Succeeded",
            "conditions": objects.pod_conditions(
                True, False, reason="PodFailed" if failed else "PodCompleted"
            )
            + disruption,
            "containerStatuses": [
                previous | {"state": {"terminated": terminated}, "ready": False, "started": False}
            ],
        }
        self.write(pod)

    # --- the garbage collector --------------------------------------------------------------

    def collect_garbage(self, now: float) -> None:
        """One pass, in the order that lets a foreground deletion end within it."""
        uids = self.store.uids()
        for kind in ("podgroups", "configmaps", "pods"):
            for obj in list(self.store.of(kind)):
                owners = [r["uid"] for r in obj["metadata"].get("ownerReferences") or ()]
                if owners and not any(uid in uids for uid in owners):
                    self.delete(kind, obj, now)  # its owner is gone: background deletion
        finalizing = [
            job
            for job in self.store.of("jobs")
            if "foregroundDeletion" in (job["metadata"].get("finalizers") or ())
        ]
        for job in finalizing:  # foreground: the dependents first...
            for kind, dependent in self.store.owned_by(job["metadata"]["uid"]):
                self.delete(kind, dependent, now)
        for pod in list(self.store.of("pods")):
            if pod["metadata"].get("deletionTimestamp") and pod["status"]["phase"] != "Running":
                self.remove("pods", pod)  # not started or ended: the kubelet has nothing to stop
        for job in finalizing:  # ...then the owner, once none is left
            if not self.store.owned_by(job["metadata"]["uid"]):
                self.remove("jobs", job)

    def delete(self, kind: str, obj: dict, now: float) -> None:
        if kind == "pods":
            self.delete_pod(obj, now)
        else:
            self.remove(kind, obj)

    def remove(self, kind: str, obj: dict) -> None:
        metadata = obj["metadata"]
        self.store.remove(kind, metadata.get("namespace", ""), metadata["name"])
        self.lives.pop(metadata["uid"], None)
        self.asleep.discard(metadata["uid"])
