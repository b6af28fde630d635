"""A cluster's Node as the console reads it (resources/backends/kubernetes/nodes.py):
accelerators, board slices, drivers, memory and quantities, as the client models and the plain
API give them."""

from __future__ import annotations

import contextlib
import json
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes import client

from resources.backends.base import NodeInfo
from resources.backends.kubernetes.nodes import node_info, parse_quantity
from tests.resources.k8s_fake import node, node_list
from tests.resources.k8s_fake.varied_nodes import A100_LABELS, CLUSTER


class TestNodeInfo:
    """The pure mapping, without HTTP."""

    def test_accepts_the_client_models_too(self):
        # The fake's JSON deserializes into the client's own V1NodeList (so it is API-shaped),
        # and the models, serialized back, map to the same NodeInfo as the raw JSON.
        payload = node_list(CLUSTER)
        api_client = client.ApiClient()
        nodes = api_client.deserialize(json.dumps(payload), "V1NodeList", "application/json")
        assert [n.metadata.name for n in nodes.items] == [n["metadata"]["name"] for n in CLUSTER]
        assert nodes.items[0].status.node_info.kernel_version == "5.15.0-105-generic"
        for model, raw in zip(nodes.items, CLUSTER, strict=True):
            assert node_info(api_client.sanitize_for_serialization(model)) == node_info(raw)

    @pytest.mark.parametrize(
        ("resource", "kind", "model"),
        [
            ("nvidia.com/gpu", "GPU", ""),
            ("cambricon.com/mlu", "MLU", ""),
            ("cambricon.com/mlu370", "MLU", ""),
            ("huawei.com/Ascend910", "NPU", "Ascend910"),
            ("huawei.com/Ascend310P", "NPU", "Ascend310P"),
            ("huawei.com/ascend-1980", "NPU", "ascend-1980"),
        ],
    )
    def test_accelerator_resources(self, resource, kind, model):
        info = node_info(node("n", extended={resource: "2"}))
        assert (info.accelerator_kind, info.board_count, info.accelerator_model) == (kind, 2, model)

    @pytest.mark.parametrize(
        "resource",
        ["nvidia.com/mig-1g.5gb", "huawei.com/Ascend910-2c", "cambricon.com/mlu370.smlu.vcore"],
    )
    def test_board_slices_are_not_boards(self, resource):
        info = node_info(node("n", extended={resource: "7"}))
        assert (info.accelerator_kind, info.board_count) == ("CPU", 0)

    def test_no_healthy_board_is_a_cpu_node(self):
        info = node_info(node("n", extended={"nvidia.com/gpu": "0"}, labels=A100_LABELS))
        assert (info.accelerator_kind, info.board_count, info.accelerator_model) == ("CPU", 0, "")
        assert info.driver_version == ""

    def test_the_kind_with_most_boards_wins(self):
        info = node_info(node("n", extended={"nvidia.com/gpu": "1", "cambricon.com/mlu": "8"}))
        assert (info.accelerator_kind, info.board_count) == ("MLU", 8)

    @pytest.mark.parametrize(
        ("labels", "version"),
        [
            (
                {"nvidia.com/cuda.driver.major": "550", "nvidia.com/cuda.driver.minor": "54"},
                "550.54",
            ),
            ({"nvidia.com/cuda.driver-version.full": "550.54.15"}, "550.54.15"),
            ({"console.io/driver-version": "24.1.rc2", **A100_LABELS}, "24.1.rc2"),
            ({"nvidia.com/cuda.driver.minor": "54"}, ""),
            ({}, ""),
        ],
    )
    def test_driver_version(self, labels, version):
        info = node_info(node("n", extended={"nvidia.com/gpu": "1"}, labels=labels))
        assert info.driver_version == version

    @pytest.mark.parametrize(
        ("label", "slices"),
        [("1", 1), ("2", 2), ("4", 4), ("8", 8), ("3", 1), ("16", 1), ("-2", 1), ("x", 1)],
    )
    def test_slices_per_board(self, label, slices):
        labels = {"console.io/slices-per-board": label}
        info = node_info(node("n", extended={"nvidia.com/gpu": "1"}, labels=labels))
        assert info.slices_per_board == slices

    @pytest.mark.parametrize(
        ("labels", "gib"),
        [
            ({"nvidia.com/gpu.memory": "40960"}, 40),
            ({"nvidia.com/gpu.memory": "81559"}, 80),
            ({"nvidia.com/gpu.memory": "81920", "console.io/accelerator-memory-gib": "96"}, 96),
            ({"nvidia.com/gpu.memory": "lots"}, 0),
            ({}, 0),
        ],
    )
    def test_accelerator_memory(self, labels, gib):
        info = node_info(node("n", extended={"nvidia.com/gpu": "1"}, labels=labels))
        assert info.accelerator_memory_gib == gib

    @pytest.mark.parametrize(
        ("cpu", "memory", "millicores", "mib"),
        [
            ("7800m", "32986188Ki", 7800, 32213),
            ("8", "32Gi", 8000, 32768),
            ("0.5", "128974848", 500, 123),
            ("1e3", "64G", 1_000_000, 61035),
            ("2.0005", "1.5Gi", 2000, 1536),
            ("4", "1Ti", 4000, 1024 * 1024),
        ],
    )
    def test_quantities(self, cpu, memory, millicores, mib):
        info = node_info(node("n", cpu=cpu, memory=memory))
        assert (info.cpu_millicores, info.memory_mib) == (millicores, mib)

    @pytest.mark.parametrize(
        "allocatable",
        [
            {},
            {"cpu": "8"},
            {"memory": "8Gi"},
            {"cpu": "0", "memory": "8Gi"},
            {"cpu": "8", "memory": "-1Gi"},
        ],
    )
    def test_nodes_without_cpu_or_memory_are_skipped(self, allocatable):
        assert node_info(node("n", allocatable=allocatable)) is None

    def test_a_nearly_empty_node(self):
        assert node_info({}) is None
        info = node_info(
            {"metadata": {"name": "bare"}, "status": {"allocatable": {"cpu": "1", "memory": "1Mi"}}}
        )
        assert info == NodeInfo(name="bare", cpu_millicores=1000, memory_mib=1, ready=False)

    def test_huge_values_are_clamped_to_the_columns(self):
        info = node_info(node("n", cpu="1E", memory="9Ei", extended={"nvidia.com/gpu": "1e9"}))
        assert (info.cpu_millicores, info.memory_mib, info.board_count) == (
            2**31 - 1,
            2**31 - 1,
            2**15 - 1,
        )


class TestParseQuantity:
    @pytest.mark.parametrize(
        ("text", "value"),
        [
            ("7800m", Fraction(78, 10)),
            ("8", Fraction(8)),
            ("0.5", Fraction(1, 2)),
            (".5", Fraction(1, 2)),
            ("5.", Fraction(5)),
            ("32Gi", Fraction(32 * 2**30)),
            ("32986188Ki", Fraction(32986188 * 1024)),
            ("64G", Fraction(64 * 10**9)),
            ("1e3", Fraction(1000)),
            ("1E3", Fraction(1000)),
            ("1E", Fraction(10**18)),
            ("2.5e-3", Fraction(25, 10**4)),
            ("+1k", Fraction(1000)),
            ("-1.5Mi", Fraction(-3 * 2**19)),
            ("128974848", Fraction(128974848)),
            (42, Fraction(42)),
        ],
    )
    def test_examples(self, text, value):
        assert parse_quantity(text) == value

    @pytest.mark.parametrize(
        "text",
        [
            "",
            " 1",
            "1 ",
            "1e",
            "1.2.3",
            "Gi",
            "1gi",
            "1KiB",
            "1Ki3",
            "--1",
            "1e1000",
            "١٢",
            None,
            1.5,
            True,
        ],
    )
    def test_garbage(self, text):
        with pytest.raises(ValueError):
            parse_quantity(text)

    @given(st.text(max_size=30))
    def test_any_text_parses_or_raises_value_error(self, text):
        with contextlib.suppress(ValueError):
            assert isinstance(parse_quantity(text), Fraction)

    @given(st.text(alphabet="0123456789.+-eEmkKMGTPi", max_size=12))
    def test_quantity_like_text_parses_or_raises_value_error(self, text):
        with contextlib.suppress(ValueError):
            assert isinstance(parse_quantity(text), Fraction)

    @given(st.integers(min_value=-(10**18), max_value=10**18))
    def test_canonical_forms_are_exact(self, n):
        assert parse_quantity(f"{n}") == n
        assert parse_quantity(f"{n}m") == Fraction(n, 1000)
        assert parse_quantity(f"{n}k") == n * 1000
        assert parse_quantity(f"{n}Ki") == n * 2**10
        assert parse_quantity(f"{n}Mi") == n * 2**20
        assert parse_quantity(f"{n}Gi") == n * 2**30
        assert parse_quantity(f"{n}Ti") == n * 2**40
        assert parse_quantity(f"{n}G") == n * 10**9
        assert parse_quantity(f"{n}e6") == n * 10**6

    @given(st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**9), max_value=10**9))
    def test_decimal_numbers_are_exact(self, number: Decimal):
        assert parse_quantity(str(number)) == Fraction(number)

    @given(
        st.integers(min_value=1, max_value=2**31 - 1), st.integers(min_value=1024, max_value=2**40)
    )
    def test_node_rounding(self, millicores, kib):
        info = node_info(node("n", cpu=f"{millicores}m", memory=f"{kib}Ki"))
        assert info.cpu_millicores == millicores
        assert info.memory_mib == min(kib // 1024, 2**31 - 1)


def test_the_problems_a_node_reports_are_its_holding_conditions_other_than_ready():
    item = node("gpu-01", cpu="8", memory="32Gi")
    item["status"]["conditions"] += [
        {"type": "KernelDeadlock", "status": "True", "reason": "DockerHung",
         "message": "task docker:7 blocked for more than 300 seconds."},
        {"type": "ReadonlyFilesystem", "status": "False", "reason": "FilesystemIsNotReadOnly"},
        {"type": "MemoryPressure", "status": "Unknown", "reason": "NodeStatusUnknown"},
        {"type": "NetworkUnavailable", "status": "True", "reason": "NoRouteCreated"},
        "not a condition",
    ]  # fmt: skip
    info = node_info(item)
    assert info.ready  # the kubelet still posts Ready: only the console's inspection sees it
    assert info.conditions == (
        ("KernelDeadlock", "DockerHung: task docker:7 blocked for more than 300 seconds."),
        ("NetworkUnavailable", "NoRouteCreated"),
    )


def test_a_cordon_is_not_ready_unless_the_console_made_it():
    item = node("gpu-01", cpu="8", memory="32Gi")
    item.setdefault("spec", {})["unschedulable"] = True
    assert not node_info(item).ready
    item["metadata"].setdefault("annotations", {})["console.io/isolated"] = "node-lost"
    info = node_info(item)
    assert info.ready and info.console_cordon
