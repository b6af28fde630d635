"""The console's quotas as Volcano Queues (``scheduling.volcano.sh/v1beta1``), and keeping a
cluster's set of them as the quotas say (SPEC G1, G2 on Kubernetes).

One Queue per project with a quota on the cluster's boards, and one per department, the
projects' queues under their department's (``parent``). Boards are the cluster's accelerator
resource: *deserved* and *guarantee* are the guaranteed boards, *capability* the maximum
(none without one). The console stays the one that decides: it admits jobs only within
these numbers, so the queues are ``reclaimable: false`` — Volcano never evicts a job on its
own to give its boards to another queue; the console's reclaim (jobs.faults.reclaim) does,
with the checkpoint signal and its events.

Rendering is pure; :func:`sync` talks to the cluster through the backend's API client, only
ever touching the queues it labelled, so an admin's own queues are left alone.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from math import ceil, floor

from resources.backends.kubernetes.schema import problems

API_VERSION = "scheduling.volcano.sh/v1beta1"
PATH = "/apis/scheduling.volcano.sh/v1beta1/queues"
CRD = "queues.scheduling.volcano.sh"
MANAGED_LABEL = "console.io/quota"
PREFIX = "console-"
_INVALID = re.compile(r"[^a-z0-9-]+")
_HASHED = re.compile(r"-h[0-9a-f]{8}$")  # the end of a name that could not be the slug itself
LONGEST = 63


@dataclass(frozen=True)
class QueueSpec:
    """What one Queue says, in boards (fractions as the cluster counts whole resources:
    the guarantee rounded down, the maximum up)."""

    name: str
    guaranteed: float
    maximum: float | None = None
    parent: str = ""
    weight: int = 1


def queue_name(kind: str, slug: str) -> str:
    """``console-<slug>`` for a project, ``console-dept-<slug>`` for a department: a valid
    Kubernetes name whatever the slug, and never one queue for two holders.

    A slug that is already a valid name is used as it is. Any other (capitals, underscores,
    too long, a project's slug that begins with ``dept-``, or one that ends like a hashed
    name) is cleaned and ends in ``-h`` and eight hex digits of its kind and slug: "Vision_A"
    and "vision-a" are two projects, and two queues."""
    middle = "dept-" if kind == "department" else ""
    plain = f"{PREFIX}{middle}{slug}"
    cleaned = _INVALID.sub("-", slug.lower()).strip("-")
    clash = kind != "department" and slug.startswith("dept-")
    if cleaned == slug and len(plain) <= LONGEST and not clash and not _HASHED.search(slug):
        return plain
    digest = hashlib.sha256(f"{kind}:{slug}".encode()).hexdigest()[:8]
    head = f"{PREFIX}{middle}{cleaned}"[: LONGEST - len(digest) - 2].rstrip("-")
    return f"{head}-h{digest}"


def render(spec: QueueSpec, resource: str) -> dict:
    """The Queue object for ``spec``; ``resource`` is how the cluster names a board."""
    guaranteed = {resource: str(floor(spec.guaranteed))}
    body: dict = {
        "weight": spec.weight,
        "reclaimable": False,
        "deserved": dict(guaranteed),
        "guarantee": {"resource": dict(guaranteed)},
    }
    if spec.maximum is not None:
        body["capability"] = {resource: str(ceil(spec.maximum))}
    if spec.parent:
        body["parent"] = spec.parent
    return {
        "apiVersion": API_VERSION,
        "kind": "Queue",
        "metadata": {"name": spec.name, "labels": {MANAGED_LABEL: "true"}},
        "spec": body,
    }


@dataclass
class QueueSync:
    """What a sync changed, by queue name."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def check(queues: list[dict], schema: dict | None) -> list[str]:
    """Every problem of the rendered queues against the CRD's schema (None: not readable,
    the API server then checks alone)."""
    if not schema:
        return []
    return [f"{q['metadata']['name']}: {p}" for q in queues for p in problems(q, schema)]


def sync(api, wanted: list[dict]) -> QueueSync:
    """Make the cluster's labelled queues exactly ``wanted``: create the missing ones, update
    those that differ (spec or parent), delete those no quota asks for any more. Parents are
    created before their children and deleted after them."""
    have = {
        item["metadata"]["name"]: item
        for item in api.get(PATH, "list Volcano queues", labelSelector=MANAGED_LABEL).get(
            "items", []
        )
    }
    done = QueueSync()
    for queue in sorted(wanted, key=lambda q: "parent" in q["spec"]):
        name = queue["metadata"]["name"]
        current = have.get(name)
        if current is None:
            api.request("POST", PATH, "create Volcano queues", body=queue)
            done.created.append(name)
        elif _ours(current.get("spec") or {}) != queue["spec"]:
            changed = {**queue, "metadata": {**queue["metadata"],
                       "resourceVersion": current["metadata"]["resourceVersion"]}}  # fmt: skip
            api.request("PUT", f"{PATH}/{name}", "update Volcano queues", body=changed)
            done.updated.append(name)
        else:
            done.kept.append(name)
    names = {q["metadata"]["name"] for q in wanted}
    children_first = sorted(have, key=lambda n: "parent" not in (have[n].get("spec") or {}))
    for name in children_first:
        if name not in names:
            api.request("DELETE", f"{PATH}/{name}", "delete Volcano queues")
            done.deleted.append(name)
    return done


def _ours(spec: dict) -> dict:
    """The keys of a queue's spec the console sets (the cluster adds defaults of its own)."""
    keys = ("weight", "reclaimable", "deserved", "guarantee", "capability", "parent")
    return {key: spec[key] for key in keys if key in spec}
