"""The schemas a cluster serves for Volcano's custom resources, read through the API (the
objects the backend renders are checked against them before they are sent)."""

from __future__ import annotations

from resources.backends.base import BackendError
from resources.backends.kubernetes.api import ApiAnswer, ApiRefused
from resources.backends.kubernetes.schema import crd_schema


def served_schema(api, name: str, version: str) -> dict | None:
    """The schema of CRD ``name`` at ``version`` as the cluster serves it; None when our
    account may not read CRDs (the API server then checks alone). BackendError when the
    cluster has no such resource: Volcano is not installed."""
    try:
        crd = api.get(
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}",
            f"read the definition of {name}",
        )
        return dict(crd_schema(crd, version))
    except ApiRefused:
        return None
    except ApiAnswer as error:
        if error.status == 404:
            raise BackendError(f"Volcano is not installed on the cluster (no {name})") from None
        raise
    except KeyError:
        return None
