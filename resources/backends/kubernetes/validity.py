"""Whether the objects rendered for a workload are valid before they are sent: the Volcano
Job against the CRD schema the cluster serves, its pod templates and the ConfigMap strictly
against the Kubernetes OpenAPI (``kubernetes-validate``)."""

from __future__ import annotations

from resources.backends.kubernetes.schema import problems

KUBERNETES_VERSION = "1.31"  # the core OpenAPI the ConfigMap is checked against


class RenderError(ValueError):
    """The objects for a workload do not pass the schemas: nothing was sent."""


def check(job: dict, files: dict, job_schema: dict | None) -> None:
    """RenderError naming the first few problems of the Job and its ConfigMap, if any.
    ``job_schema``: the Job CRD's schema, None where the cluster does not let us read it."""
    found = problems(job, job_schema) if job_schema else []
    found += task_problems(job)
    found += core_problems(files, "the ConfigMap")
    if found:
        shown = "; ".join(found[:3]) + (f" (and {len(found) - 3} more)" if len(found) > 3 else "")
        raise RenderError(f"the job's Kubernetes objects are not valid: {shown}")


def task_problems(job: dict) -> list[str]:
    """Every pod template of a Volcano Job, strictly against the Kubernetes OpenAPI."""
    found: list[str] = []
    for task in job["spec"]["tasks"]:
        template = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": task["name"]},
            "template": task["template"],
        }
        found += core_problems(template, f"task {task['name']}")
    return found


def core_problems(obj: dict, what: str) -> list[str]:
    """An object of the core API, strictly against the Kubernetes OpenAPI."""
    # Imported on first use, as the client is (api.py says why).
    import kubernetes_validate

    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        path = ".".join(str(part) for part in getattr(error, "path", ()) or ())
        return [f"{what}: {path + ': ' if path else ''}{getattr(error, 'message', error)}"]
    except (kubernetes_validate.SchemaNotFoundError, kubernetes_validate.InvalidSchemaError):
        return []
    return []
