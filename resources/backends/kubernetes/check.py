"""The "test connection" of a cluster: what an admin needs to know before jobs run there.

The API's version; whether Volcano is installed (its Job resource is served); which verbs
our account lacks, asked of the API server itself (SelfSubjectAccessReview), named as an
admin would grant them ("create jobs.batch.volcano.sh"); and how many nodes it sees.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from resources.backends.base import BackendError
from resources.backends.kubernetes.api import ApiAnswer, ApiRefused

if TYPE_CHECKING:
    from resources.backends.kubernetes.backend import KubernetesBackend

VOLCANO = "/apis/batch.volcano.sh/v1alpha1"
logger = logging.getLogger(__name__)

# What the console does on a cluster, as (verb, group, resource) for the connection test.
NEEDED = (
    ("list", "", "nodes"),
    ("create", "batch.volcano.sh", "jobs"),
    ("get", "batch.volcano.sh", "jobs"),
    ("list", "batch.volcano.sh", "jobs"),
    ("delete", "batch.volcano.sh", "jobs"),
    ("create", "", "configmaps"),
    ("delete", "", "configmaps"),
    ("list", "", "pods"),
    ("get", "", "pods/log"),
    ("list", "scheduling.volcano.sh", "podgroups"),
)
OPTIONAL = (
    ("list", "metrics.k8s.io", "pods"),
    ("get", "apiextensions.k8s.io", "customresourcedefinitions"),
    ("create", "", "pods/exec"),  # the debug terminal (k8s_exec)
    ("patch", "", "nodes"),  # isolated nodes cordoned on the cluster (k8s_cordon)
)


@dataclass(frozen=True)
class Check:
    """What the connection test found, in words (empty lists: all is well)."""

    version: str = ""
    problems: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()  # verbs our account lacks that jobs need
    optional_missing: tuple[str, ...] = ()
    volcano: bool = False
    nodes: int = 0

    @property
    def ok(self) -> bool:
        return bool(self.version) and self.volcano and not self.problems and not self.missing


def _verb_words(verb: str, group: str, resource: str) -> str:
    name = f"{resource}.{group}" if group else resource
    return f"{verb} {name}"


def check(self: KubernetesBackend) -> Check:
    """The connection test: version, Volcano's CRD, and the verbs our account lacks."""
    try:
        version = self.api.get("/version", "tell its version").get("gitVersion", "?")
    except BackendError as error:
        return Check(problems=(str(error),))
    found: list[str] = []
    volcano = False
    try:
        self.api.get(
            f"{VOLCANO}/namespaces/{self.target.namespace}/jobs", "list Volcano jobs", limit=1
        )
        volcano = True
    except ApiAnswer as error:
        if error.status == 404:
            found.append("Volcano is not installed: the cluster serves no jobs.batch.volcano.sh")
        else:
            found.append(str(error))
    except ApiRefused:
        volcano = True  # it exists; the missing verb is reported below
    except BackendError as error:
        found.append(str(error))
    missing, optional, nodes = [], [], 0
    try:
        for needed, into in ((NEEDED, missing), (OPTIONAL, optional)):
            for verb, group, resource in needed:
                if not _may(self, verb, group, resource):
                    into.append(_verb_words(verb, group, resource))
    except BackendError as error:
        found.append(str(error))
    # Counted even when the reviews could not be asked: the nodes seen are worth knowing.
    if "list nodes" not in missing:
        try:
            nodes = len(self.inventory())
        except BackendError as error:
            found.append(str(error))
    return Check(version, tuple(found), tuple(missing), tuple(optional), volcano, nodes)


def _may(self: KubernetesBackend, verb: str, group: str, resource: str) -> bool:
    resource, _, subresource = resource.partition("/")
    attributes = {"verb": verb, "group": group, "resource": resource}
    if subresource:
        attributes["subresource"] = subresource
    if resource != "nodes" and group != "apiextensions.k8s.io":
        attributes["namespace"] = self.target.namespace
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    answer = self.api.request(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        "review its own permissions",
        body=review,
    )
    return bool(((answer or {}).get("status") or {}).get("allowed"))  # type: ignore[union-attr]


def health(backend: KubernetesBackend) -> str:
    """Empty when the API answers us; else what is wrong, in words."""
    try:
        backend.api.get("/version", "tell its version")
        # /version is often open to anyone: listing one node also proves we may read them.
        backend.api.get("/api/v1/nodes", "list nodes", limit=1)
    except BackendError as error:
        return str(error)
    except Exception as error:
        # A health check that raises would take the status page down with it.
        logger.exception("Kubernetes health check failed")
        return f"unexpected error: {error}".splitlines()[0]
    return ""
