"""The Kubernetes backend's inventory and health, against a real HTTP server (k8s_fake).

No mock of the kubernetes client: the backend loads a real kubeconfig, the client makes
real requests to 127.0.0.1, and the server checks the bearer token as the API server does.
"""

from __future__ import annotations

import socket

import pytest
from kubernetes import client

from resources.backends.base import BackendError, NodeInfo
from resources.backends.kubernetes import backend as k8s
from resources.backends.kubernetes.api import Connection
from resources.backends.kubernetes.backend import KubernetesBackend as Backend
from tests.resources.k8s_fake import FakeKubernetes, node
from tests.resources.k8s_fake.varied_nodes import A100_LABELS, CLUSTER


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
