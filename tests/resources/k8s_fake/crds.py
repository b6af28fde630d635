"""Volcano's CRDs, read from beside the checkout where they are (the fake then checks a Job
against the very schema a cluster serves, and serves the definitions); tests that need them skip
without."""

from __future__ import annotations

import functools
from pathlib import Path

import yaml

from resources.backends.kubernetes.schema import crd_schema

CRDS = Path(__file__).resolve().parents[3].parent / "shared" / "k8s" / "crds"


HAVE_CRDS = (CRDS / "batch.volcano.sh_jobs.yaml").exists()


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


@functools.cache
def queue_schema() -> dict:
    return dict(crd_schema(crd("queues.scheduling.volcano.sh"), "v1beta1"))
