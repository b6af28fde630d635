"""Isolation the cluster honours (SPEC F3 on Kubernetes, seed 003): a node the console isolates
is cordoned on the cluster too, so that no pod of another scheduler or user lands there
either, with an annotation that says why and who; "Return to service" uncordons it.

Only a cordon the console made (its annotation) is ever undone: an admin's own
``kubectl cordon`` is left alone. Without the verb ``patch nodes`` nothing is patched and
the console still keeps its own jobs off the node (the connection test says so).
"""

from __future__ import annotations

from datetime import UTC, datetime

ANNOTATION = "console.io/isolated"
BY = "console.io/isolated-by"
AT = "console.io/isolated-at"
# Annotation values have no size limit of their own beyond the object's; a reason is a line.
LONGEST_REASON = 500
MERGE_PATCH = "application/merge-patch+json"


def cordon_body(reason: str, by: str, at: datetime | None = None) -> dict:
    at = (at or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    annotations = {ANNOTATION: reason[:LONGEST_REASON] or "isolated", BY: by, AT: at}
    return {"metadata": {"annotations": annotations}, "spec": {"unschedulable": True}}


# null removes a key in a JSON merge patch (RFC 7396).
UNCORDON_BODY = {
    "metadata": {"annotations": {ANNOTATION: None, BY: None, AT: None}},
    "spec": {"unschedulable": None},
}


def path(name: str) -> str:
    return f"/api/v1/nodes/{name}"
