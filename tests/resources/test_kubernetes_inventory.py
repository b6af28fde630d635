"""The Kubernetes backend's inventory and health, against a real HTTP server (k8s_fake).

No mock of the kubernetes client: the backend loads a real kubeconfig, the client makes
real requests to 127.0.0.1, and the server checks the bearer token as the API server does.
"""

from __future__ import annotations

import contextlib
import json
import socket
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes import client

from resources.backends.base import BackendError, NodeInfo
from resources.backends.kubernetes import backend as k8s
from resources.backends.kubernetes.api import Connection
from resources.backends.kubernetes.backend import KubernetesBackend as Backend
from resources.backends.kubernetes.backend import node_info, parse_quantity
from tests.resources.k8s_fake import FakeKubernetes, node, node_list

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


def base_labels(name: str) -> dict[str, str]:
    return {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
    }


def KubernetesBackend(**kwargs) -> Backend:
    """A backend for the kubeconfig file the test put in settings.KUBECONFIG."""
    from django.conf import settings

    return Backend(Connection("kubeconfig_file", path=settings.KUBECONFIG), **kwargs)


@pytest.fixture
def api(tmp_path, settings):
    """The fake API server with CLUSTER's nodes; settings.KUBECONFIG points at it."""
    with FakeKubernetes(CLUSTER) as fake:
        settings.KUBECONFIG = str(fake.kubeconfig(tmp_path / "kubeconfig"))
        yield fake


@pytest.fixture
def inventory(api) -> dict[str, NodeInfo]:
    return {info.name: info for info in KubernetesBackend().inventory()}


class TestInventory:
    def test_lists_every_node_with_resources(self, inventory):
        assert sorted(inventory) == sorted(
            ["gpu-a100-01", "mlu-01", "npu-01", "cpu-01", "down-01", "cordoned-01", "odd-01"]
        )

    def test_gpu_node(self, inventory):
        assert inventory["gpu-a100-01"] == NodeInfo(
            name="gpu-a100-01",
            cpu_millicores=95_900,
            memory_mib=1_032_000,  # 1056768000 KiB / 1024
            ready=True,
            os_image="Ubuntu 22.04.4 LTS",
            kernel="5.15.0-105-generic",
            accelerator_model="NVIDIA-A100-SXM4-80GB",
            accelerator_kind="GPU",
            accelerator_memory_gib=80,
            board_count=8,
            slices_per_board=1,
            driver_version="535.104.05",
            labels={**base_labels("gpu-a100-01"), **A100_LABELS},
        )

    def test_mlu_node(self, inventory):
        mlu = inventory["mlu-01"]
        assert (mlu.accelerator_kind, mlu.board_count, mlu.accelerator_model) == (
            "MLU",
            4,
            "MLU370-X8",
        )
        assert (mlu.accelerator_memory_gib, mlu.driver_version, mlu.slices_per_board) == (
            48,
            "5.10.22",
            4,
        )
        assert (mlu.cpu_millicores, mlu.memory_mib) == (64_000, 256 * 1024)

    def test_npu_node_takes_its_model_from_the_resource_name(self, inventory):
        npu = inventory["npu-01"]
        assert (npu.accelerator_kind, npu.board_count, npu.accelerator_model) == (
            "NPU",
            8,
            "Ascend910",
        )
        assert npu.accelerator_memory_gib == 64
        assert npu.driver_version == ""
        assert npu.os_image == "Kylin Linux Advanced Server V10 (Sword)"
        assert npu.kernel == "4.19.90-24.4.v2101.ky10.aarch64"
        assert npu.labels["kubernetes.io/arch"] == "arm64"

    def test_cpu_only_node(self, inventory):
        assert inventory["cpu-01"] == NodeInfo(
            name="cpu-01",
            cpu_millicores=32_000,
            memory_mib=128 * 1024,
            os_image="Ubuntu 22.04.4 LTS",
            kernel="5.15.0-105-generic",
            labels=base_labels("cpu-01"),
        )

    def test_not_ready_and_cordoned_nodes_are_not_ready(self, inventory):
        assert inventory["cpu-01"].ready
        assert not inventory["down-01"].ready
        assert not inventory["cordoned-01"].ready

    def test_odd_quantities_and_labels(self, inventory):
        odd = inventory["odd-01"]
        assert odd.cpu_millicores == 10_000  # "1e1" cores
        assert odd.memory_mib == 61_035  # 64e9 bytes, rounded down
        assert odd.accelerator_model == "V100"  # the console's label wins over the product
        assert odd.accelerator_memory_gib == 16  # 16160 MiB, to the nearest GiB
        assert odd.driver_version == "550.54.15"
        assert odd.slices_per_board == 1  # 3 is not a slicing the console accepts

    def test_pages_through_a_big_cluster(self, api, monkeypatch):
        monkeypatch.setattr(k8s, "PAGE_SIZE", 2)
        names = [info.name for info in KubernetesBackend().inventory()]
        assert len(names) == 7
        node_requests = [path for path in api.requests if path.startswith("/api/v1/nodes")]
        assert len(node_requests) == 5  # 9 nodes, 2 a page
        assert "continue=2" in node_requests[1]

    def test_backends_talk_to_their_own_server(self, tmp_path, settings):
        default_host = client.Configuration.get_default_copy().host
        with (
            FakeKubernetes([node("east-01")]) as east,
            FakeKubernetes([node("west-01"), node("west-02")], token="west-token") as west,
        ):
            settings.KUBECONFIG = str(east.kubeconfig(tmp_path / "east"))
            east_backend = KubernetesBackend()
            east_backend.inventory()
            settings.KUBECONFIG = str(west.kubeconfig(tmp_path / "west"))
            west_backend = KubernetesBackend()
            assert [n.name for n in west_backend.inventory()] == ["west-01", "west-02"]
            assert [n.name for n in east_backend.inventory()] == ["east-01"]
        # Nothing leaked into the client's module-wide default configuration.
        assert client.Configuration.get_default_copy().host == default_host

    def test_wrong_token_is_a_backend_error(self, api, tmp_path, settings):
        settings.KUBECONFIG = str(api.kubeconfig(tmp_path / "bad", token="wrong"))
        with pytest.raises(
            BackendError,
            match=r"^the API refused our credentials \(401\): the token may have expired",
        ):
            KubernetesBackend().inventory()

    def test_unreachable_server_is_a_backend_error(self, api):
        api.stop()
        with pytest.raises(BackendError, match="connection refused"):
            KubernetesBackend().inventory()


class TestHealth:
    def test_ok(self, api):
        assert KubernetesBackend().health() == ""
        assert {"/version", "/api/v1/nodes?limit=1"} <= set(api.requests)

    def test_server_stopped(self, api):
        api.stop()
        assert KubernetesBackend().health() == f"cannot reach {api.url}: connection refused"

    def test_wrong_token(self, api, tmp_path, settings):
        settings.KUBECONFIG = str(api.kubeconfig(tmp_path / "bad", token="wrong"))
        assert KubernetesBackend().health().startswith("the API refused our credentials (401)")

    def test_rotated_credentials_are_reloaded_after_a_401(self, api, tmp_path, settings):
        path = api.kubeconfig(tmp_path / "config", token="old-token")
        settings.KUBECONFIG = str(path)
        backend = KubernetesBackend()
        assert backend.health().startswith("the API refused our credentials (401)")
        api.kubeconfig(path)  # the operator fixes the token in place
        assert backend.health() == ""

    def test_an_answer_that_is_not_json(self, api):
        api.html = "<html><body>Please sign in</body></html>"
        assert KubernetesBackend().health() == f"{api.url} did not answer with a JSON object"
        with pytest.raises(BackendError, match="did not answer with a JSON object"):
            KubernetesBackend().inventory()

    def test_server_that_never_answers(self, api, tmp_path, settings):
        # A socket that listens but never accepts: connecting works, no answer ever comes.
        with socket.create_server(("127.0.0.1", 0)) as silent:
            api.port = silent.getsockname()[1]
            settings.KUBECONFIG = str(api.kubeconfig(tmp_path / "silent"))
            message = KubernetesBackend(timeout=0.5).health()
        assert message == f"cannot reach http://127.0.0.1:{api.port}: no answer within 0.5 s"

    def test_tls_to_a_plain_http_server(self, api, tmp_path, settings):
        settings.KUBECONFIG = str(api.kubeconfig(tmp_path / "tls", scheme="https"))
        message = KubernetesBackend().health()
        assert message.startswith(f"cannot reach https://127.0.0.1:{api.port}: TLS error")
        assert "\n" not in message

    def test_broken_kubeconfig(self, tmp_path, settings):
        (tmp_path / "broken").write_text("clusters: [{")
        settings.KUBECONFIG = str(tmp_path / "broken")
        message = KubernetesBackend().health()
        assert message == f"cannot load the kubeconfig {tmp_path / 'broken'}: not valid YAML"

    def test_missing_kubeconfig(self, tmp_path, settings):
        settings.KUBECONFIG = str(tmp_path / "nowhere")
        message = KubernetesBackend().health()
        assert message == f"cannot load the kubeconfig {tmp_path / 'nowhere'}: no such file"
        with pytest.raises(BackendError):
            KubernetesBackend().inventory()


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
