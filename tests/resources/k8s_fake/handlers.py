"""The fake API server's resources: what each path answers, in the API's own words.

Called under the store's lock with a parsed Request; returns (HTTP code, JSON body or
text). Paths of an API group the server does not serve answer 404 with the plain text
"404 page not found", as kube-apiserver does (e.g. Volcano not installed)."""

from __future__ import annotations

import copy
import functools
import re
import time
from pathlib import Path

import yaml

from resources.backends.kubernetes.nodes import parse_quantity
from resources.backends.kubernetes.schema import crd_schema, problems
from resources.backends.kubernetes.validity import core_problems, task_problems
from tests.resources.k8s_fake import objects
from tests.resources.k8s_fake.objects import node_list, parse_stamp, stamp, status
from tests.resources.k8s_fake.store import BadSelector, TooOld, parse_selector

CRDS = Path(__file__).resolve().parents[3].parent / "shared" / "k8s" / "crds"
HAVE_CRDS = (CRDS / "batch.volcano.sh_jobs.yaml").exists()
PAGE_NOT_FOUND = "404 page not found\n"
VOLCANO_GROUPS = ("batch.volcano.sh", "scheduling.volcano.sh")
# (group, resource) -> (kind, apiVersion, verbs served)
RESOURCES = {
    ("", "configmaps"): ("ConfigMap", "v1", {"create", "get", "list", "update", "delete"}),
    ("", "pods"): ("Pod", "v1", {"get", "list", "delete"}),
    ("batch.volcano.sh", "jobs"): (
        "Job",
        objects.JOB_API,
        {"create", "get", "list", "update", "delete"},
    ),
    ("scheduling.volcano.sh", "podgroups"): ("PodGroup", objects.PODGROUP_API, {"get", "list"}),
}
SERVED = {
    ("", "v1"),
    ("batch.volcano.sh", "v1alpha1"),
    ("scheduling.volcano.sh", "v1beta1"),
    ("metrics.k8s.io", "v1beta1"),
    ("authorization.k8s.io", "v1"),
    ("apiextensions.k8s.io", "v1"),
}
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@functools.cache
def crd(name: str) -> dict:
    """A CRD from Volcano's published yaml, as the API server stores it."""
    group = name.split(".", 1)[1]
    text = (CRDS / f"{group}_{name.split('.')[0]}.yaml").read_text()
    document = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    document["metadata"] |= {
        "uid": "9d4c56a2-5d0e-4c38-9a55-2a3c1f0e7b11",
        "resourceVersion": "812",
        "generation": 1,
        "creationTimestamp": "2025-05-01T08:00:00Z",
    }
    names = document["spec"]["names"]
    document["status"] = {
        "acceptedNames": names,
        "storedVersions": [v["name"] for v in document["spec"]["versions"] if v.get("storage")],
        "conditions": [
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
                "lastTransitionTime": "2025-05-01T08:00:00Z",
            }
        ],
    }
    return document


@functools.cache
def job_schema() -> dict:
    return dict(crd_schema(crd("jobs.batch.volcano.sh"), "v1alpha1"))


def handle(fake, request):
    group, resource = request.group, request.resource
    if (group, request.version) not in SERVED or (group in VOLCANO_GROUPS and not fake.volcano):
        return 404, PAGE_NOT_FOUND
    if group == "metrics.k8s.io" and not fake.metrics:
        return 404, PAGE_NOT_FOUND
    if group == "apiextensions.k8s.io" and resource == "customresourcedefinitions":
        return definition(fake, request)
    if group == "authorization.k8s.io" and resource == "selfsubjectaccessreviews":
        return review(fake, request)
    if group == "metrics.k8s.io" and resource == "pods":
        return metrics(fake, request)
    if (group, resource) == ("", "nodes") and request.verb in ("get", "list"):
        if not request.name:
            return 200, node_list(fake.nodes, request.query)
        found = [n for n in fake.nodes if n["metadata"]["name"] == request.name]
        return (200, copy.deepcopy(found[0])) if found else not_found(request)
    served = RESOURCES.get((group, resource))
    if served is None:
        return 404, PAGE_NOT_FOUND
    if request.subresource == "log" and resource == "pods" and request.verb == "get":
        return log(fake, request)
    if request.subresource or request.verb not in served[2]:
        return 405, status(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    return {"list": listing, "get": get, "create": create, "update": update, "delete": delete}[
        request.verb
    ](fake, request, resource, served)


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
    metadata["namespace"] = request.namespace
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


def log(fake, request):
    pod = fake.store.get("pods", request.namespace, request.name)
    if pod is None:
        return not_found(request)
    names = [c["name"] for c in pod["spec"].get("containers") or ()]
    container = request.query.get("container") or (names[0] if len(names) == 1 else "")
    if container not in names:
        return 400, status(
            400, "BadRequest", f"container {container} is not valid for pod {request.name}"
        )
    life = fake.controller.lives.get(pod["metadata"]["uid"])
    if life is None or life.started_at is None:
        state = (pod["status"].get("containerStatuses") or [{}])[0].get("state") or {}
        reason = (state.get("waiting") or {}).get("reason") or "ContainerCreating"
        if reason in ("ErrImagePull", "ImagePullBackOff"):
            reason = "trying and failing to pull image"
        return 400, status(
            400,
            "BadRequest",
            f'container "{container}" in pod "{request.name}" is waiting to start: {reason}',
        )
    lines = life.logs
    since = request.query.get("sinceTime")
    if since:
        try:
            moment = parse_stamp(since)
        except ValueError:
            return 400, status(400, "BadRequest", f"invalid sinceTime {since!r}")
        lines = [(at, text) for at, text in lines if at >= moment]
    if request.query.get("tailLines"):
        lines = lines[-int(request.query["tailLines"]) :] if int(request.query["tailLines"]) else []
    stamped = request.query.get("timestamps") == "true"
    text = "".join(
        f"{objects.nano_stamp(at)} {line}\n" if stamped else f"{line}\n" for at, line in lines
    )
    limit = int(request.query.get("limitBytes") or 0)
    if limit:
        text = text.encode()[:limit].decode("utf-8", "ignore")
    return 200, text


def metrics(fake, request):
    running = [
        p
        for p in fake.store.of("pods", request.namespace or None)
        if p["status"]["phase"] == "Running"
    ]
    items = []
    for pod in running:
        life = fake.controller.lives.get(pod["metadata"]["uid"])
        if life is None or life.started_at is None:
            continue
        nanocores = int(parse_quantity(life.script.cpu) * 10**9)
        kib = int(parse_quantity(life.script.memory) / 1024)
        items.append(objects.pod_metrics(pod, nanocores, kib))
    if request.name:
        found = [i for i in items if i["metadata"]["name"] == request.name]
        if not found:
            return 404, status(
                404, "NotFound", f'podmetrics.metrics.k8s.io "{request.name}" not found'
            )
        return 200, found[0]
    return listing(fake, request, "pods", ("PodMetrics", "metrics.k8s.io/v1beta1"), items)


def definition(fake, request):
    name = request.name
    known = {
        "jobs.batch.volcano.sh",
        "podgroups.scheduling.volcano.sh",
        "queues.scheduling.volcano.sh",
    }
    if request.verb != "get":
        return 405, status(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    if name not in known or not fake.volcano or not HAVE_CRDS:
        return not_found(request)
    return 200, copy.deepcopy(crd(name))


def review(fake, request):
    body = request.json()
    if request.verb != "create" or not isinstance(body, dict):
        return 405, status(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    attributes = (body.get("spec") or {}).get("resourceAttributes") or {}
    resource = attributes.get("resource", "")
    if attributes.get("subresource"):
        resource = f"{resource}/{attributes['subresource']}"
    asked = (attributes.get("verb", ""), attributes.get("group", ""), resource)
    allowed = asked not in fake.forbidden
    body["metadata"] = {"creationTimestamp": None}
    body["status"] = {"allowed": allowed}
    if allowed:
        body["status"]["reason"] = (
            'RBAC: allowed by RoleBinding "console/ml" of Role "console" '
            'to ServiceAccount "console/console"'
        )
    return 201, body
