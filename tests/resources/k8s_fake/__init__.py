"""An HTTP fake of the Kubernetes API server with Volcano, for tests (and benchmarks).

Real HTTP on 127.0.0.1, real paths and shapes: Nodes (paged), Volcano Jobs (checked
strictly against Volcano's CRD and the Kubernetes OpenAPI), ConfigMaps, Pods and their logs,
PodGroups, pod metrics, SelfSubjectAccessReviews and the Job CRD itself; resourceVersions,
409s, 410s, 401s and 403s as the API server answers them. A background thread plays
Volcano's controller, the scheduler and the kubelets, as scripted per job name prefix.

Standalone (a benchmark's separate process): ``python -m tests.resources.k8s_fake --help``.
"""

from tests.resources.k8s_fake.crds import CRDS, HAVE_CRDS
from tests.resources.k8s_fake.objects import TOKEN, node, node_list, status
from tests.resources.k8s_fake.script import Script
from tests.resources.k8s_fake.server import FakeKubernetes

__all__ = ["CRDS", "HAVE_CRDS", "TOKEN", "FakeKubernetes", "Script", "node", "node_list",
           "status"]  # fmt: skip
