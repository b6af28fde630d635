"""A cluster of varied nodes, as the API gives them: accelerators of three vendors, board
slices, drivers and memory in labels, and the nodes a real cluster also holds (down,
cordoned, with no resources, with quantities that do not parse)."""

from __future__ import annotations

from tests.resources.k8s_fake import node

A100_LABELS = {
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
    "nvidia.com/gpu.memory": "81920",
    "nvidia.com/gpu.count": "8",
    "nvidia.com/cuda.driver.major": "535",
    "nvidia.com/cuda.driver.minor": "104",
    "nvidia.com/cuda.driver.rev": "05",
    "console.io/pool": "vision",
}


CLUSTER = [
    node(
        "gpu-a100-01",
        cpu="95900m",
        memory="1056768000Ki",
        extended={"nvidia.com/gpu": "8"},
        labels=A100_LABELS,
    ),
    node(
        "mlu-01",
        cpu="64",
        memory="256Gi",
        extended={"cambricon.com/mlu": "4"},
        labels={
            "console.io/accelerator-model": "MLU370-X8",
            "console.io/accelerator-memory-gib": "48",
            "console.io/driver-version": "5.10.22",
            "console.io/slices-per-board": "4",
        },
    ),
    node(
        "npu-01",
        cpu="192",
        memory="1536Gi",
        extended={"huawei.com/Ascend910": "8"},
        labels={"console.io/accelerator-memory-gib": "64", "kubernetes.io/arch": "arm64"},
        os_image="Kylin Linux Advanced Server V10 (Sword)",
        kernel="4.19.90-24.4.v2101.ky10.aarch64",
    ),
    node("cpu-01", cpu="32", memory="128Gi"),
    node("down-01", cpu="32", memory="128Gi", ready=False),
    node("cordoned-01", cpu="32", memory="128Gi", unschedulable=True),
    node(
        "odd-01",
        cpu="1e1",
        memory="64G",
        extended={"nvidia.com/gpu": "4"},
        labels={
            "nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB",
            "console.io/accelerator-model": "V100",
            "nvidia.com/gpu.memory": "16160",
            "nvidia.com/cuda.driver-version.full": "550.54.15",
            "console.io/slices-per-board": "3",
        },
    ),
    node("no-resources-01", allocatable={}),
    node("garbage-01", cpu="lots", memory="128Gi"),
]
