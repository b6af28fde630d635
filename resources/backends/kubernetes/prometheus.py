"""GPU use of a cluster's pods from the DCGM exporter, through Prometheus' HTTP API.

Two instant queries per look (utilisation and framebuffer memory), averaged and summed per
pod over its GPUs. Prometheus is optional: any failure means "no GPU figures", never an error.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
import urllib.request

logger = logging.getLogger(__name__)

QUERIES = {
    "util": 'avg by (pod) (DCGM_FI_DEV_GPU_UTIL{{namespace="{ns}"}})',
    "memory": 'sum by (pod) (DCGM_FI_DEV_FB_USED{{namespace="{ns}"}})',
}


def _vector(base: str, query: str, timeout: float) -> list[tuple[dict, float]]:
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': query})}"
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        body = json.load(answer)
    found = []
    for item in (body.get("data") or {}).get("result") or []:
        try:
            found.append((item.get("metric") or {}, float(item["value"][1])))
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    return found


def _query(base: str, query: str, timeout: float) -> dict[str, float]:
    return {metric.get("pod"): value for metric, value in _vector(base, query, timeout)}


def gpu_use(
    base: str, namespace: str, timeout: float
) -> dict[str, tuple[float | None, float | None]]:
    try:
        util = _query(base, QUERIES["util"].format(ns=namespace), timeout)
        memory = _query(base, QUERIES["memory"].format(ns=namespace), timeout)
    except (OSError, ValueError) as error:
        logger.info("no GPU metrics from %s: %s", base, error)
        return {}
    return {pod: (util.get(pod), memory.get(pod)) for pod in set(util) | set(memory)}


# Hardware faults of a GPU (NVIDIA's XID catalogue): a double-bit ECC error (48), row
# remapping (63, 64), NVLink (74), fallen off the bus (79), and the uncorrectable and
# contained errors of newer boards (92, 94, 95, 119, 120). Others (13, 31, 43...) are
# errors of the program on the board: the job's own, not the node's.
HARDWARE_XIDS = frozenset({48, 63, 64, 74, 79, 92, 94, 95, 119, 120})
# An XID seen this recently counts; the exporter's gauge holds the last one seen.
XID_WINDOW = "10m"
# A network interface counts as down when it was up within the hour and is not now (an
# interface never cabled is not a fault).
NODE_QUERIES = {
    "xid": f"max by (Hostname, gpu) (max_over_time(DCGM_FI_DEV_XID_ERRORS[{XID_WINDOW}]))",
    "nic": 'node_network_up{device=~"(ib|eth|en|bond).*"} == 0 '
    "and on (instance, device) max_over_time(node_network_up[1h]) == 1",
}


def _node_of(metric: dict) -> str:
    """The node a series is of: DCGM's ``Hostname``, a ``node`` label, else the scrape
    target (``instance``, relabelled to the node's name, or its host before the port)."""
    for label in ("Hostname", "node", "kubernetes_node"):
        if metric.get(label):
            return str(metric[label])
    return str(metric.get("instance", "")).rsplit(":", 1)[0]


def node_signals(base: str, timeout: float) -> dict[str, dict] | None:
    """Per node: ``xid`` (the hardware XID codes seen lately, by board; None where no DCGM
    exporter reports the node) and ``nic_down`` (the interfaces gone down); None when
    Prometheus cannot say (not set, away, or not answering as Prometheus does): the checks
    are then not measured, never failed."""
    if not base:
        return None
    try:
        xids = _vector(base, NODE_QUERIES["xid"], timeout)
        nics = _vector(base, NODE_QUERIES["nic"], timeout)
    except (OSError, ValueError) as error:
        logger.info("no node signals from %s: %s", base, error)
        return None
    found: dict[str, dict] = {}
    for metric, value in xids:
        node = found.setdefault(_node_of(metric), {"xid": None, "nic_down": []})
        node["xid"] = node["xid"] or {}
        if int(value) in HARDWARE_XIDS:
            node["xid"][str(metric.get("gpu", "?"))] = int(value)
    for metric, _value in nics:
        node = found.setdefault(_node_of(metric), {"xid": None, "nic_down": []})
        node["nic_down"].append(str(metric.get("device", "?")))
    return found
