"""A Kubernetes Node as the console's NodeInfo: pure, fed the Node exactly as the API sends
it (plain JSON). Quantities are parsed exactly (no float), and a bogus value on one node
never breaks the whole sync.
"""

from __future__ import annotations

import logging
import re
from decimal import Decimal
from fractions import Fraction
from math import floor
from typing import Any

from resources.backends.base import NodeInfo
from resources.backends.kubernetes import cordon

logger = logging.getLogger(__name__)

PAGE_SIZE = 500  # nodes per list call: big clusters come in pages, not one huge answer

# Labels an operator can set on any node; they win over what vendors' labellers report.
MODEL_LABEL = "console.io/accelerator-model"
MEMORY_LABEL = "console.io/accelerator-memory-gib"
DRIVER_LABEL = "console.io/driver-version"
SLICES_LABEL = "console.io/slices-per-board"

# Extended resources counted as whole boards. Names with a template suffix (Ascend910-2c,
# mlu370.smlu.vcore, nvidia.com/mig-1g.5gb) are slices of a board, not boards: not matched.
ACCELERATOR_RESOURCES = (
    ("GPU", re.compile(r"nvidia\.com/gpu")),
    ("MLU", re.compile(r"cambricon\.com/mlu\d*")),
    ("NPU", re.compile(r"huawei\.com/(?P<model>Ascend\d+[A-Za-z]*\d*|ascend-\d+[A-Za-z]*\d*)")),
)

# Node columns are 32-bit (boards 16-bit): a bogus quantity must not break the whole sync.
INT32_MAX, INT16_MAX = 2**31 - 1, 2**15 - 1

# Kubernetes quantity grammar: signed decimal number, then a binary suffix (Ki...Ei), a
# decimal suffix (m, k, M...E) or a decimal exponent (e3, E-2). Digits are ASCII only.
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<binary>[KMGTPE]i)|(?P<decimal>[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_MAX_EXPONENT = 64  # far beyond any real node; keeps 1e999999999 from eating the CPU


def parse_quantity(text: str | int) -> Fraction:
    """The exact value of a Kubernetes quantity ("7800m", "32Gi", "1e3"...).

    Raises ValueError (only) when ``text`` is not a quantity.
    """
    if isinstance(text, int) and not isinstance(text, bool):
        return Fraction(text)
    match = _QUANTITY.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"not a quantity: {text!r}")
    value = Fraction(Decimal(match["number"]))
    if match["binary"]:
        return value * 1024 ** _BINARY[match["binary"]]
    exponent = _DECIMAL[match["decimal"]] if match["decimal"] else int(match["exponent"] or 0)
    if abs(exponent) > _MAX_EXPONENT:
        raise ValueError(f"quantity out of range: {text!r}")
    return value * Fraction(10) ** exponent


def _quantity(resources: dict, name: str, scale: Fraction, limit: int) -> int | None:
    """``resources[name]`` in units of 1/scale, rounded down (never promise what is not
    there); None when missing or unreadable."""
    raw = resources.get(name)
    if raw is None:
        return None
    try:
        value = floor(parse_quantity(raw) * scale)
    except ValueError:
        logger.warning("ignoring %s=%r: not a Kubernetes quantity", name, raw)
        return None
    return min(max(value, 0), limit)


def _int_label(labels: dict[str, str], name: str) -> int | None:
    try:
        return int(labels.get(name, ""))
    except ValueError:
        return None


def _accelerator(allocatable: dict) -> tuple[str, int, str]:
    """(kind, boards, model guessed from the resource name) of the node's main accelerator.

    A node with several kinds (rare) reports the one it has most boards of.
    """
    best = ("CPU", 0, "")
    for resource in allocatable:
        for kind, pattern in ACCELERATOR_RESOURCES:
            match = pattern.fullmatch(resource)
            if match is None:
                continue
            boards = _quantity(allocatable, resource, Fraction(1), INT16_MAX) or 0
            if boards > best[1]:
                best = (kind, boards, match.groupdict().get("model") or "")
    return best


def _driver_version(labels: dict[str, str]) -> str:
    if labels.get(DRIVER_LABEL):
        return labels[DRIVER_LABEL]
    # NVIDIA GPU feature discovery: the newer "full" label, else the older split labels.
    if labels.get("nvidia.com/cuda.driver-version.full"):
        return labels["nvidia.com/cuda.driver-version.full"]
    parts = [labels.get(f"nvidia.com/cuda.driver.{part}", "") for part in ("major", "minor", "rev")]
    return ".".join(part for part in parts if part) if parts[0] else ""


def _memory_gib(labels: dict[str, str]) -> int:
    gib = _int_label(labels, MEMORY_LABEL)
    if gib is None:
        mib = _int_label(labels, "nvidia.com/gpu.memory")
        # Nearest, not floor: an "80 GB" board reports 81559 MiB and should say 80.
        gib = round(mib / 1024) if mib is not None else 0
    return min(max(gib, 0), INT32_MAX)


def node_info(node: dict[str, Any]) -> NodeInfo | None:
    """A v1 Node (as the API's JSON) as NodeInfo; None for nodes without CPU or memory."""
    metadata = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    allocatable = status.get("allocatable") or {}
    labels = {str(key): str(value) for key, value in (metadata.get("labels") or {}).items()}
    cpu = _quantity(allocatable, "cpu", Fraction(1000), INT32_MAX)
    memory = _quantity(allocatable, "memory", Fraction(1, 2**20), INT32_MAX)
    if not metadata.get("name") or not cpu or not memory:
        return None
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    system = status.get("nodeInfo") or {}
    ours = cordon.ANNOTATION in (metadata.get("annotations") or {})
    kind, boards, resource_model = _accelerator(allocatable)
    accelerator: dict[str, Any] = {}
    if boards:
        product = labels.get("nvidia.com/gpu.product", "") if kind == "GPU" else ""
        slices = _int_label(labels, SLICES_LABEL)
        accelerator = {
            "accelerator_kind": kind,
            "board_count": boards,
            "accelerator_model": labels.get(MODEL_LABEL) or product or resource_model,
            "accelerator_memory_gib": _memory_gib(labels),
            "driver_version": _driver_version(labels),
            "slices_per_board": slices if slices in (1, 2, 4, 8) else 1,
        }
    return NodeInfo(
        name=str(metadata["name"]),
        cpu_millicores=cpu,
        memory_mib=memory,
        # A cordoned node takes no new work: for admission it is as good as not ready; unless
        # the console cordoned it, for an isolation it keeps (and undoes) itself.
        ready=ready and (spec.get("unschedulable") is not True or ours),
        os_image=str(system.get("osImage") or "")[:100],
        kernel=str(system.get("kernelVersion") or "")[:100],
        labels=labels,
        console_cordon=ours,
        conditions=problems(conditions),
        **accelerator,
    )


def problems(conditions: list[dict]) -> tuple[tuple[str, str], ...]:
    """The node's conditions other than Ready that hold (status "True"): the standard ones
    (MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable) and those a
    node-problem-detector adds (KernelDeadlock, ReadonlyFilesystem...), all named so that
    "True" is the problem."""
    found = []
    for condition in conditions:
        kind = str(condition.get("type") or "")[:30]
        if kind and kind != "Ready" and condition.get("status") == "True":
            why = ": ".join(
                str(part) for part in (condition.get("reason"), condition.get("message")) if part
            )
            found.append((kind, why[:300]))
    return tuple(sorted(found))
