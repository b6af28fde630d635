"""What the fake API server keeps: objects by kind, namespace and name, one global
resourceVersion counter (bumped by every write, as etcd's revision), a compaction point
below which list versions are "too old", and label selectors as the API server reads them."""

from __future__ import annotations

import copy
import re
import threading
import time
import uuid

from tests.resources.k8s_fake.objects import stamp

KINDS = ("jobs", "configmaps", "pods", "podgroups", "queues")


class TooOld(Exception):
    """A list asked for a resourceVersion older than the compaction point (410 Expired)."""


class BadSelector(ValueError):
    pass


class Store:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.version = 1000
        self.compacted = 0
        self.items: dict[str, dict[tuple[str, str], dict]] = {kind: {} for kind in KINDS}

    def bump(self, obj: dict) -> dict:
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        return obj

    def add(self, kind: str, obj: dict, at: float | None = None) -> dict:
        metadata = obj.setdefault("metadata", {})
        metadata.setdefault("uid", str(uuid.uuid4()))
        metadata.setdefault("creationTimestamp", stamp(at))
        metadata.setdefault("generation", 1)
        self.items[kind][(metadata.get("namespace", ""), metadata["name"])] = obj
        return self.bump(obj)

    def get(self, kind: str, namespace: str, name: str) -> dict | None:
        return self.items[kind].get((namespace, name))

    def remove(self, kind: str, namespace: str, name: str) -> dict | None:
        gone = self.items[kind].pop((namespace, name), None)
        if gone is not None:
            self.version += 1  # a deletion is a write too
        return gone

    def of(self, kind: str, namespace: str | None = None) -> list[dict]:
        return [
            obj
            for (ns, _name), obj in self.items[kind].items()
            if namespace is None or ns == namespace
        ]

    def owned_by(self, uid: str) -> list[tuple[str, dict]]:
        return [
            (kind, obj)
            for kind in KINDS
            for obj in self.items[kind].values()
            if any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or ())
        ]

    def uids(self) -> set[str]:
        return {obj["metadata"]["uid"] for kind in KINDS for obj in self.items[kind].values()}

    def compact(self) -> None:
        """Forget history up to now: lists at any older version answer 410 Expired."""
        self.compacted = self.version

    def check_version(self, asked: str | None, match: str | None) -> None:
        if not asked or asked == "0":
            return
        if int(asked) < self.compacted and match != "Exact":
            raise TooOld(asked)
        if match == "Exact" and int(asked) != self.version:
            raise TooOld(asked)  # history is not kept: an exact past version is gone

    def snapshot(self, objs: list[dict]) -> list[dict]:
        return copy.deepcopy(objs)


_REQUIREMENT = re.compile(
    r"\s*(?P<not>!)?\s*(?P<key>[A-Za-z0-9][-A-Za-z0-9_./]*)\s*"
    r"(?:(?P<op>==|=|!=)\s*(?P<value>[-A-Za-z0-9_.]*)"
    r"|(?<=\s)(?P<set>in|notin)\s*\((?P<values>[^)]*)\))?\s*"
)


def parse_selector(text: str | None):
    """A label selector as a predicate on a labels dict (equality, inequality, existence,
    ``!key``, ``in``/``notin``); BadSelector when it does not parse."""
    text = (text or "").strip()
    checks = []
    position = 0
    while position < len(text):
        match = _REQUIREMENT.match(text, position)
        if match is None or match.end() == position:
            raise BadSelector(text)
        checks.append(_check(match))
        position = match.end()
        if position < len(text):
            if text[position] != ",":
                raise BadSelector(text)
            position += 1
    return lambda labels: all(check(labels or {}) for check in checks)


def _check(match):
    key, op, value = match["key"], match["op"], match["value"]
    if match["not"]:
        if op or match["set"]:
            raise BadSelector(match.group(0))
        return lambda labels: key not in labels
    if op in ("=", "=="):
        return lambda labels: labels.get(key) == value
    if op == "!=":
        return lambda labels: labels.get(key) != value
    if match["set"]:
        values = {v.strip() for v in match["values"].split(",")}
        if match["set"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    return lambda labels: key in labels


def now() -> float:
    return time.time()
