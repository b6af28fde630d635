"""The fake API server's plain object paths: list (label selectors, pages, resource versions
and their 410 when compacted), get, create, update and delete, each checked and answered in
kube-apiserver's words."""

from __future__ import annotations

import copy
import re
import time

from resources.backends.kubernetes.schema import problems
from resources.backends.kubernetes.validity import core_problems, task_problems
from tests.resources.k8s_fake.crds import job_schema, queue_schema
from tests.resources.k8s_fake.objects import stamp, status
from tests.resources.k8s_fake.store import BadSelector, TooOld, parse_selector

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _what(request) -> str:
    return f"{request.resource}.{request.group}" if request.group else request.resource


def not_found(request, name: str | None = None):
    name = name or request.name
    details = {"name": name, "group": request.group, "kind": request.resource}
    return 404, status(404, "NotFound", f'{_what(request)} "{name}" not found', details)


def invalid(request, kind: str, name: str, found: list[str]):
    causes = []
    for problem in found:
        where, _, message = problem.partition(": ")
        field = where.removeprefix("$.") if where.startswith("$") else where
        causes.append(
            {"reason": "FieldValueInvalid", "message": message or problem, "field": field}
        )
    shown = "; ".join(found)
    what = f"{kind}.{request.group}" if request.group else kind
    details = {"name": name, "group": request.group, "kind": kind, "causes": causes}
    message = f'{what} "{name}" is invalid: ' + (f"[{shown}]" if len(found) > 1 else shown)
    return 422, status(422, "Invalid", message, details)


def listing(fake, request, resource, served, items=None):
    query = request.query
    match = query.get("resourceVersionMatch")
    if match and not query.get("resourceVersion"):
        return 400, status(
            400,
            "BadRequest",
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        )
    try:
        chosen = parse_selector(query.get("labelSelector"))
        fake.store.check_version(query.get("resourceVersion"), match)
    except BadSelector as error:
        return 400, status(400, "BadRequest", f"unable to parse requirement: {error}")
    except TooOld:
        return 410, status(410, "Expired", "The resourceVersion for the provided list is too old.")
    asked = query.get("resourceVersion") or "0"
    if asked.isdigit() and int(asked) > fake.store.version:
        message = f"Too large resource version: {asked}, current: {fake.store.version}"
        details = {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": message}],
            "retryAfterSeconds": 1,
        }
        return 504, status(504, "Timeout", message, details)
    if items is None:
        items = fake.store.of(resource, request.namespace or None)
    items = sorted(
        (i for i in items if chosen(i["metadata"].get("labels"))),
        key=lambda i: (i["metadata"].get("namespace", ""), i["metadata"]["name"]),
    )
    start = int(query.get("continue") or 0)
    limit = int(query.get("limit") or 0) or len(items)
    metadata: dict = {"resourceVersion": str(fake.store.version)}
    if start + limit < len(items):
        metadata |= {
            "continue": str(start + limit),
            "remainingItemCount": len(items) - start - limit,
        }
    kind, api = served[0], served[1]
    return 200, {
        "kind": f"{kind}List",
        "apiVersion": api,
        "metadata": metadata,
        "items": copy.deepcopy(items[start : start + limit]),
    }


def get(fake, request, resource, served):
    obj = fake.store.get(resource, request.namespace, request.name)
    return (200, copy.deepcopy(obj)) if obj is not None else not_found(request)


def _body(request, served):
    body = request.json()
    kind, api = served[0], served[1]
    if not isinstance(body, dict):
        raise ValueError("not a JSON object")
    if body.get("apiVersion") != api or body.get("kind") != kind:
        return None, (
            400,
            status(
                400,
                "BadRequest",
                f"the API version in the data ({body.get('apiVersion')}) does "
                f"not match the expected API version ({api})",
            ),
        )
    metadata = body.setdefault("metadata", {})
    if metadata.get("namespace", request.namespace) != request.namespace:
        return None, (
            400,
            status(
                400,
                "BadRequest",
                "the namespace of the provided object does "
                "not match the namespace sent on the request",
            ),
        )
    if request.namespace:
        metadata["namespace"] = request.namespace
    else:  # a cluster-scoped object (a Volcano queue) has none
        metadata.pop("namespace", None)
    return body, None


def _problems(body: dict, resource: str) -> list[str]:
    name = body["metadata"].get("name") or ""
    found = (
        []
        if _NAME.match(name) and len(name) <= 253
        else [
            f"metadata.name: Invalid value: {name!r}: a lowercase RFC 1123 subdomain must consist "
            "of lower case alphanumeric characters, '-' or '.'"
        ]
    )
    if resource == "jobs":
        found += problems(body, job_schema())
        if not found:
            found += task_problems(body)
    elif resource == "queues":
        found += problems(body, queue_schema())
    else:
        found += core_problems(body, "the ConfigMap")
    return found


def create(fake, request, resource, served):
    body, error = _body(request, served)
    if error:
        return error
    metadata = body["metadata"]
    name = metadata.get("name") or ""
    found = _problems(body, resource)
    if metadata.get("resourceVersion"):
        found.append(
            "metadata.resourceVersion: Invalid value: resourceVersion should not be "
            "set on objects to be created"
        )
    if found:
        return invalid(request, served[0], name, found)
    if fake.store.get(resource, request.namespace, name) is not None:
        details = {"name": name, "group": request.group, "kind": resource}
        return 409, status(
            409, "AlreadyExists", f'{_what(request)} "{name}" already exists', details
        )
    if resource == "jobs":
        body.pop("status", None)  # the status subresource: a create never sets it
    for key in ("uid", "creationTimestamp", "deletionTimestamp", "generation"):
        metadata.pop(key, None)
    return 201, copy.deepcopy(fake.store.add(resource, body))


def update(fake, request, resource, served):
    body, error = _body(request, served)
    if error:
        return error
    current = fake.store.get(resource, request.namespace, request.name)
    if current is None:
        return not_found(request)
    found = _problems(body, resource)
    if body["metadata"].get("name") != request.name:
        found.append(
            "metadata.name: Invalid value: the name of the object does not match "
            "the name on the URL"
        )
    version = body["metadata"].get("resourceVersion")
    if not version:
        found.append(
            "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
        )
    if found:
        return invalid(request, served[0], request.name, found)
    if version != current["metadata"]["resourceVersion"]:
        return 409, status(
            409,
            "Conflict",
            f"Operation cannot be fulfilled on {_what(request)} "
            f'"{request.name}": the object has been modified; please apply your '
            "changes to the latest version and try again",
            {"name": request.name, "group": request.group, "kind": resource},
        )
    for key in ("spec", "data", "binaryData"):
        if key in body:
            current[key] = body[key]
    for key in ("labels", "annotations", "ownerReferences", "finalizers"):
        if key in body["metadata"]:
            current["metadata"][key] = body["metadata"][key]
    current["metadata"]["generation"] = current["metadata"].get("generation", 1) + 1
    fake.controller.wake(current["metadata"]["uid"])
    return 200, copy.deepcopy(fake.store.bump(current))


def delete(fake, request, resource, served):
    options = request.json() if request.body else {}
    options = options if isinstance(options, dict) else {}
    query = request.query
    grace = options.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
    policy = options.get("propagationPolicy") or query.get("propagationPolicy") or "Background"
    obj = fake.store.get(resource, request.namespace, request.name)
    if obj is None:
        return not_found(request)
    metadata = obj["metadata"]
    wanted = options.get("preconditions") or {}
    for key in ("uid", "resourceVersion"):
        if wanted.get(key) and wanted[key] != metadata[key]:
            return 409, status(
                409,
                "Conflict",
                f"Precondition failed: {key} in precondition: "
                f"{wanted[key]}, {key} in object meta: {metadata[key]}",
            )
    now = time.time()
    fake.controller.wake(metadata["uid"])
    if resource == "pods":
        fake.controller.delete_pod(obj, now, None if grace is None else int(grace))
        return 200, copy.deepcopy(obj)
    if policy == "Foreground":
        if not metadata.get("deletionTimestamp"):
            metadata["deletionTimestamp"] = stamp(now)
            metadata["deletionGracePeriodSeconds"] = 0
            metadata["finalizers"] = [*metadata.get("finalizers", []), "foregroundDeletion"]
            fake.store.bump(obj)
        return 200, copy.deepcopy(obj)
    if policy == "Orphan":
        for _kind, owned in fake.store.owned_by(metadata["uid"]):
            refs = owned["metadata"].get("ownerReferences") or []
            owned["metadata"]["ownerReferences"] = [r for r in refs if r["uid"] != metadata["uid"]]
            fake.store.bump(owned)
    fake.controller.remove(resource, obj)  # its dependents go with the next collection
    return 200, copy.deepcopy(obj)
