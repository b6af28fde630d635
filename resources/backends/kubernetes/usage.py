"""What a cluster's pods use: CPU and memory from the metrics API, and, where the cluster
has a Prometheus with the DCGM exporter, GPU use and memory. Each is asked once for every pod
of the namespace and kept for ``METRICS_SECONDS``, whatever the number of jobs."""

from __future__ import annotations

import logging
import time

from resources.backends.base import UsageSample
from resources.backends.kubernetes.api import Api, ApiAnswer, ApiRefused
from resources.backends.kubernetes.nodes import parse_quantity
from resources.backends.kubernetes.prometheus import gpu_use
from resources.backends.kubernetes.render import WORKLOAD_LABEL
from resources.backends.kubernetes.status import task_of

METRICS = "/apis/metrics.k8s.io/v1beta1"
METRICS_SECONDS = 5.0

logger = logging.getLogger(__name__)


class Meter:
    def __init__(self, api: Api, namespace: str, prometheus: str = "") -> None:
        self.api = api
        self.namespace = namespace
        self.prometheus = prometheus
        self.pods_seen: tuple[float, dict[str, dict]] = (0.0, {})
        self.gpus_seen: tuple[float, dict[str, tuple[float | None, float | None]]] = (0.0, {})

    def samples(self, pods: list[dict]) -> list[UsageSample]:
        """One sample per running pod of ``pods`` the metrics know."""
        metrics = self._pod_metrics()
        gpus = self._gpu_metrics() if self.prometheus else {}
        samples = []
        for pod in pods:
            name = pod["metadata"]["name"]
            if name not in metrics:
                continue
            cpu = memory = 0.0
            for container in metrics[name].get("containers") or []:
                use = container.get("usage") or {}
                cpu += float(parse_quantity(use.get("cpu", "0"))) * 100
                memory += float(parse_quantity(use.get("memory", "0"))) / 2**20
            util, used = gpus.get(name, (None, None))
            samples.append(UsageSample(task_of(pod), cpu, memory, util, used))
        return samples

    def _pod_metrics(self) -> dict[str, dict]:
        at, metrics = self.pods_seen
        if time.monotonic() - at > METRICS_SECONDS:
            try:
                answer = self.api.get(
                    f"{METRICS}/namespaces/{self.namespace}/pods",
                    "read pod metrics",
                    labelSelector=WORKLOAD_LABEL,
                )
                metrics = {i["metadata"]["name"]: i for i in answer.get("items") or []}
            except (ApiAnswer, ApiRefused) as error:
                logger.info("no pod metrics from %s: %s", self.api.host, error)
                metrics = {}
            self.pods_seen = (time.monotonic(), metrics)
        return metrics

    def _gpu_metrics(self) -> dict[str, tuple[float | None, float | None]]:
        """Per pod: (GPU use %, GPU memory MiB) from the DCGM exporter, via Prometheus."""
        at, gpus = self.gpus_seen
        if time.monotonic() - at > METRICS_SECONDS:
            gpus = gpu_use(self.prometheus, self.namespace, self.api.timeout)
            self.gpus_seen = (time.monotonic(), gpus)
        return gpus
