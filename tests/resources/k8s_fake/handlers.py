"""The fake API server's resources: what each path answers, in the API's own words.

Called under the store's lock with a parsed Request; returns (HTTP code, JSON body or
text). Paths of an API group the server does not serve answer 404 with the plain text
"404 page not found", as kube-apiserver does (e.g. Volcano not installed)."""

from __future__ import annotations

import copy

from resources.backends.kubernetes.nodes import parse_quantity
from tests.resources.k8s_fake import objects
from tests.resources.k8s_fake.crds import HAVE_CRDS, crd
from tests.resources.k8s_fake.crud import create, delete, get, listing, not_found, update
from tests.resources.k8s_fake.objects import node_list, parse_stamp, status

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
    # Cluster-scoped: no namespace in their paths.
    ("scheduling.volcano.sh", "queues"): (
        "Queue",
        objects.PODGROUP_API,
        {"create", "get", "list", "update", "delete"},
    ),
}
SERVED = {
    ("", "v1"),
    ("batch.volcano.sh", "v1alpha1"),
    ("scheduling.volcano.sh", "v1beta1"),
    ("metrics.k8s.io", "v1beta1"),
    ("authorization.k8s.io", "v1"),
    ("apiextensions.k8s.io", "v1"),
}


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
    if (group, resource) == ("", "nodes") and request.verb == "patch":
        return patch_node(fake, request)
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


PATCH_TYPES = ("application/merge-patch+json", "application/strategic-merge-patch+json")


def patch_node(fake, request):
    """A node's JSON merge patch (``kubectl cordon`` and annotations), as the API takes it:
    any other body type is 415, as a plain ``application/json`` is on a real cluster."""
    if request.content_type not in PATCH_TYPES:
        return 415, status(
            415, "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types "
            f"include: application/json-patch+json, {', '.join(PATCH_TYPES)}, "
            "application/apply-patch+yaml",
        )  # fmt: skip
    found = [n for n in fake.nodes if n["metadata"]["name"] == request.name]
    if not found:
        return not_found(request)
    merge(found[0], request.json())
    return 200, copy.deepcopy(found[0])


def merge(target: dict, patch: dict) -> None:
    """RFC 7396: objects merge, null removes, anything else replaces."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            if not isinstance(target.get(key), dict):
                target[key] = {}
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


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
