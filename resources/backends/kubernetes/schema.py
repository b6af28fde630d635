"""A strict check of an object against a structural OpenAPI v3 schema, as Kubernetes CRDs
publish them (``openAPIV3Schema``): wrong types, missing required fields, values outside an
enum or pattern, and — unlike the API server, which drops them silently — unknown fields.

The Kubernetes backend checks every object it renders before sending it, against the
schema the cluster itself serves for the CRD, so that a rendering mistake is a clear event
on the job rather than a field the cluster quietly ignored. Pure: plain data in, the list of
problems out, each with the path to the field (``$.spec.tasks[0].template...``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping


def problems(value, schema: Mapping, path: str = "$") -> list[str]:
    """Every way ``value`` breaks ``schema``; empty when it conforms."""
    if value is None:
        return [] if schema.get("nullable") else [f"{path}: null is not allowed"]
    if schema.get("x-kubernetes-int-or-string"):
        if isinstance(value, bool) or not isinstance(value, int | str):
            return [f"{path}: expected an integer or a string, not {_kind(value)}"]
        return _pattern(value, schema, path) if isinstance(value, str) else []
    if "anyOf" in schema and all(problems(value, option, path) for option in schema["anyOf"]):
        return [f"{path}: matches none of the allowed forms"]
    expected = schema.get("type")
    checker = _CHECKS.get(expected)
    if checker is not None and not checker(value):
        return [f"{path}: expected {expected}, not {_kind(value)}"]
    found: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str):
        found += _pattern(value, schema, path)
        if len(value) < schema.get("minLength", 0):
            found.append(f"{path}: shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            found.append(f"{path}: longer than {schema['maxLength']} characters")
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and "minimum" in schema and value < schema["minimum"]:
        found.append(f"{path}: below the minimum {schema['minimum']}")
    if expected == "array":
        if len(value) < schema.get("minItems", 0):
            found.append(f"{path}: fewer than {schema['minItems']} items")
        for index, item in enumerate(value):
            found += problems(item, schema.get("items", {}), f"{path}[{index}]")
    if expected == "object":
        found += _object(value, schema, path)
    return found


def _object(value: Mapping, schema: Mapping, path: str) -> list[str]:
    found = [
        f"{path}.{name}: required"
        for name in schema.get("required", ())
        if name not in value or value[name] is None
    ]
    known = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    open_ended = schema.get("x-kubernetes-preserve-unknown-fields") or extra is True
    for name, item in value.items():
        where = f"{path}.{name}"
        if not isinstance(name, str):
            found.append(f"{where}: field names are strings")
        elif name in known:
            found += problems(item, known[name], where)
        elif isinstance(extra, Mapping):
            found += problems(item, extra, where)
        elif not open_ended:
            found.append(f"{where}: unknown field")
    return found


def _pattern(value: str, schema: Mapping, path: str) -> list[str]:
    pattern = schema.get("pattern")
    if pattern and re.search(pattern, value) is None:
        return [f"{path}: {value!r} does not match {pattern}"]
    return []


def _kind(value) -> str:
    return type(value).__name__


_CHECKS = {
    "object": lambda v: isinstance(v, Mapping),
    "array": lambda v: isinstance(v, list | tuple),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


def crd_schema(crd: Mapping, version: str) -> Mapping:
    """The ``openAPIV3Schema`` of one served version of a CustomResourceDefinition, with
    ``metadata`` left to the API server (a CRD schema only says it is an object)."""
    for served in crd["spec"]["versions"]:
        if served["name"] == version:
            schema = dict(served["schema"]["openAPIV3Schema"])
            properties = dict(schema.get("properties", {}))
            properties["metadata"] = {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
            }
            schema["properties"] = properties
            return schema
    raise KeyError(f"the CRD serves no version {version!r}")
