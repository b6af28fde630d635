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


def _query(base: str, query: str, timeout: float) -> dict[str, float]:
    url = f"{base}/api/v1/query?{urllib.parse.urlencode({'query': query})}"
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        body = json.load(answer)
    values = {}
    for item in (body.get("data") or {}).get("result") or []:
        pod = (item.get("metric") or {}).get("pod")
        try:
            values[pod] = float(item["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    return values


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
