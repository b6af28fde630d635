"""Clusters in the inventory settings: each connection kind, every rule, secrets kept secret.

alice is a project member (no access), admin is a platform admin.
"""

from __future__ import annotations

import html
import json

import pytest
from django.utils import translation

from console import names
from resources.models import Cluster
from tests.jobs.factories import JobFactory
from tests.resources.cluster_helpers import certificate
from tests.resources.factories import ClusterFactory, NodeFactory, ResourcePoolFactory

pytestmark = pytest.mark.django_db

NEW = "/settings/inventory/clusters/new/"
TOKEN = "sa-token-s3cret-0123456789"


def kubeconfig(*contexts: str, current: str = "") -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.1:6443"}}],
            "users": [{"name": "u", "user": {"token": "kube-s3cret-token"}}],
            "contexts": [{"name": n, "context": {"cluster": "c", "user": "u"}} for n in contexts],
            "current-context": current,
        }
    )


KUBECONFIG = kubeconfig("dev", "train", current="dev")


def token_data(**changes) -> dict:
    data = {
        "name": "gpu-east",
        "description": "A100 racks",
        "connection": "token",
        "api_url": "https://k8s.example.com:6443",
        "ca_certificate": certificate()[0],
        "token": TOKEN,
        "kubeconfig": "",
        "context": "",
        "namespace": "training",
        "queue": "research",
        "accelerator_resource": "nvidia.com/gpu",
        "storage_claim": "console-storage",
        "storage_host_path": "",
        "prometheus_url": "http://prometheus.monitoring:9090",
    }
    data.update(changes)
    return data


def kubeconfig_data(**changes) -> dict:
    values = {"connection": "kubeconfig", "api_url": "", "ca_certificate": "", "token": "",
              "kubeconfig": KUBECONFIG, "context": "train"}  # fmt: skip
    return token_data(**{**values, **changes})


@pytest.fixture
def as_admin(client, admin):
    client.force_login(admin)
    return client


def errors_of(response) -> dict:
    assert response.status_code == 422, response.status_code
    return response.context["form"].errors


def assert_no_secret(response, *secrets: str) -> None:
    page = response.content.decode()
    for secret in secrets:
        assert secret not in page
        assert html.escape(secret) not in page


class TestAccess:
    def test_anonymous_goes_to_log_in(self, client):
        assert client.get("/settings/inventory/clusters/")["Location"].startswith("/login/")

    def test_members_are_refused(self, client, alice):
        cluster = ClusterFactory()
        client.force_login(alice)
        assert client.get("/settings/inventory/clusters/").status_code == 403
        assert client.post(NEW, token_data()).status_code == 403
        assert client.get(f"/settings/inventory/clusters/{cluster.pk}/").status_code == 403
        for button in ("test", "sync"):
            url = f"/settings/inventory/clusters/{cluster.pk}/{button}/"
            assert client.post(url).status_code == 403
        assert not Cluster.objects.filter(name="gpu-east").exists()

    def test_buttons_take_only_posts(self, as_admin):
        cluster = ClusterFactory()
        assert as_admin.get(f"/settings/inventory/clusters/{cluster.pk}/test/").status_code == 405


class TestCreate:
    def test_token_cluster(self, as_admin):
        pool = ResourcePoolFactory(name="vision")
        response = as_admin.post(NEW, token_data(default_pool=pool.pk))
        assert response.status_code == 302
        cluster = Cluster.objects.get(name="gpu-east")
        assert cluster.connection == "token"
        assert cluster.token() == TOKEN
        assert TOKEN not in cluster.sealed_token
        assert cluster.ca_certificate.startswith("-----BEGIN CERTIFICATE-----")
        assert (cluster.namespace, cluster.queue, cluster.default_pool) == (
            "training", "research", pool,
        )  # fmt: skip
        assert not cluster.has_kubeconfig

    def test_kubeconfig_cluster(self, as_admin):
        response = as_admin.post(NEW, kubeconfig_data())
        assert response.status_code == 302
        cluster = Cluster.objects.get(name="gpu-east")
        assert (cluster.connection, cluster.context) == ("kubeconfig", "train")
        assert cluster.kubeconfig() == KUBECONFIG
        assert not cluster.has_token and cluster.api_url == ""

    def test_kubeconfig_context_may_be_its_current_one(self, as_admin):
        assert as_admin.post(NEW, kubeconfig_data(context="")).status_code == 302

    def test_in_cluster(self, as_admin):
        data = token_data(connection="in_cluster", api_url="", ca_certificate="", token="")
        data.update(storage_claim="", storage_host_path="/mnt/console/")
        assert as_admin.post(NEW, data).status_code == 302
        cluster = Cluster.objects.get()
        assert (cluster.connection, cluster.storage_host_path) == ("in_cluster", "/mnt/console")
        assert not cluster.has_token and not cluster.has_kubeconfig

    def test_listed_with_its_connection_nodes_and_pool(
        self, as_admin, django_assert_max_num_queries
    ):
        pool = ResourcePoolFactory(name="vision")
        cluster = ClusterFactory(name="east", default_pool=pool, namespace="train")
        NodeFactory.create_batch(2, cluster=cluster, last_heartbeat="2026-01-02T03:04:05Z")
        ClusterFactory(name="west", connection="kubeconfig", context="prod", api_url="")
        with django_assert_max_num_queries(8):
            response = as_admin.get("/settings/inventory/clusters/")
        rows = {c.name: c for c in response.context["objects"]}
        assert (rows["east"].node_count, rows["west"].node_count) == (2, 0)
        assert rows["west"].last_sync is None
        page = response.content.decode()
        for text in ("https://k8s.example.com:6443", "prod", "vision", "never", "train"):
            assert text in page


class TestRules:
    @pytest.mark.parametrize(
        ("changes", "field", "words"),
        [
            ({"api_url": "k8s.example.com"}, "api_url", "Not an address"),
            ({"api_url": "https://"}, "api_url", "Not an address"),
            ({"api_url": "http://k8s.example.com:6443"}, "api_url", "Use an https:// address"),
            ({"api_url": ""}, "api_url", "Enter the API server's address."),
            ({"ca_certificate": "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----"},
             "ca_certificate", "Not a PEM certificate"),
            ({"token": ""}, "token", "Enter the bearer token"),
            ({"token": "two words"}, "token", "no spaces"),
            ({"namespace": "Training"}, "namespace", "lowercase letters"),
            ({"namespace": "team_a"}, "namespace", "lowercase letters"),
            ({"queue": "-q"}, "queue", "lowercase letters"),
            ({"accelerator_resource": "gpu"}, "accelerator_resource", "nvidia.com/gpu"),
            ({"storage_claim": "", "storage_host_path": ""}, "storage_claim", "/workspace"),
            ({"storage_host_path": "/mnt/console"}, "storage_host_path", "not both"),
            ({"storage_claim": "", "storage_host_path": "mnt/x"}, "storage_host_path",
             "absolute folder"),
            ({"storage_claim": "", "storage_host_path": "/mnt/../etc"}, "storage_host_path",
             "“..”"),
            ({"storage_claim": "Console_Storage"}, "storage_claim", "lowercase letters"),
            ({"prometheus_url": "ftp://metrics"}, "prometheus_url", "Not an address"),
            ({"name": "gpu east"}, "name", "no spaces"),
        ],
    )  # fmt: skip
    def test_token_form(self, as_admin, changes, field, words):
        response = as_admin.post(NEW, token_data(**changes))
        errors = errors_of(response)
        assert words in " ".join(errors[field]), errors
        assert not Cluster.objects.exists()
        page = response.content.decode()
        # Everything typed is back, except the secret, which asks to be entered again.
        for name, value in {**token_data(), **changes}.items():
            if name not in ("token", "connection", "ca_certificate") and value:
                assert html.escape(value) in page, name
        if "ca_certificate" not in changes:
            assert "BEGIN CERTIFICATE" in page
        assert_no_secret(response, TOKEN)
        if changes.get("token", TOKEN):
            assert "enter it again" in page

    @pytest.mark.parametrize(
        ("changes", "field", "words"),
        [
            ({"kubeconfig": "a: [b"}, "kubeconfig", "not valid YAML (line"),
            ({"kubeconfig": "just text"}, "kubeconfig", "not a kubeconfig"),
            ({"kubeconfig": ""}, "kubeconfig", "Paste the kubeconfig."),
            ({"context": "prod"}, "context", "no context “prod”. Its contexts: dev, train."),
            ({"kubeconfig": kubeconfig("a", "b"), "context": ""}, "context",
             "no current context: choose one of its contexts: a, b."),
        ],
    )  # fmt: skip
    def test_kubeconfig_form(self, as_admin, changes, field, words):
        response = as_admin.post(NEW, kubeconfig_data(**changes))
        errors = errors_of(response)
        assert words in html.unescape(" ".join(errors[field])), errors
        assert_no_secret(response, "kube-s3cret-token", KUBECONFIG)
        assert "A100 racks" in response.content.decode()

    def test_name_rules_are_the_shared_ones(self, as_admin):
        errors = errors_of(as_admin.post(NEW, token_data(namespace="x" * 64, queue="Q")))
        assert errors["namespace"] == [names.KUBERNETES_NAME.problem("")]
        assert errors["queue"] == [names.KUBERNETES_NAME.problem("")]

    def test_odd_input_is_never_a_500(self, as_admin):
        data = dict.fromkeys(token_data(), "\u202e' OR 1=1; -- ü")
        assert as_admin.post(NEW, data).status_code == 422
        data = token_data(connection="kubeconfig", kubeconfig="- [a, b]\n- !!python/object {}")
        assert as_admin.post(NEW, data).status_code == 422


class TestEdit:
    def url(self, cluster):
        return f"/settings/inventory/clusters/{cluster.pk}/"

    def test_token_is_kept_when_left_empty(self, as_admin):
        cluster = ClusterFactory(token=TOKEN)
        page = as_admin.get(self.url(cluster))
        assert "Leave empty to keep it" in page.content.decode()
        assert_no_secret(page, TOKEN)
        response = as_admin.post(self.url(cluster), token_data(name=cluster.name, token=""))
        assert response.status_code == 302
        cluster.refresh_from_db()
        assert (cluster.token(), cluster.namespace) == (TOKEN, "training")

    def test_new_token_replaces_it(self, as_admin):
        cluster = ClusterFactory(token=TOKEN)
        as_admin.post(self.url(cluster), token_data(name=cluster.name, token="new-one"))
        cluster.refresh_from_db()
        assert cluster.token() == "new-one"

    def test_kubeconfig_kept_and_contexts_checked_against_it(self, as_admin):
        response = as_admin.post(NEW, kubeconfig_data())
        cluster = Cluster.objects.get()
        page = as_admin.get(self.url(cluster))
        assert_no_secret(page, "kube-s3cret-token")
        assert "Leave empty to keep it" in page.content.decode()
        response = as_admin.post(self.url(cluster), kubeconfig_data(kubeconfig="", context="dev"))
        assert response.status_code == 302
        response = as_admin.post(self.url(cluster), kubeconfig_data(kubeconfig="", context="x"))
        assert "Its contexts: dev, train." in html.unescape(
            " ".join(errors_of(response)["context"])
        )
        cluster.refresh_from_db()
        assert (cluster.kubeconfig(), cluster.context) == (KUBECONFIG, "dev")

    def test_switching_kind_drops_the_other_secret(self, as_admin):
        cluster = ClusterFactory(token=TOKEN)
        response = as_admin.post(self.url(cluster), kubeconfig_data(name=cluster.name))
        assert response.status_code == 302
        cluster.refresh_from_db()
        assert cluster.has_kubeconfig and not cluster.has_token

    def test_switching_to_kubeconfig_needs_one(self, as_admin):
        cluster = ClusterFactory(token=TOKEN)
        response = as_admin.post(self.url(cluster), kubeconfig_data(kubeconfig=""))
        assert "Paste the kubeconfig." in errors_of(response)["kubeconfig"]

    def test_edit_page_has_the_buttons(self, as_admin):
        cluster = ClusterFactory()
        page = as_admin.get(self.url(cluster)).content.decode()
        assert f'action="/settings/inventory/clusters/{cluster.pk}/test/"' in page
        assert f'action="/settings/inventory/clusters/{cluster.pk}/sync/"' in page
        assert "Test connection" not in as_admin.get(NEW).content.decode()


class TestRetire:
    def url(self, cluster):
        return f"/settings/inventory/clusters/{cluster.pk}/retire/"

    def test_refused_while_an_attempt_runs_there(self, as_admin):
        cluster = ClusterFactory(name="east")
        job = JobFactory(name="resnet-train", status="running")
        attempt = job.attempts.create(
            number=1, backend="kubernetes", cluster=cluster, workload_id="w-1", state="running"
        )
        response = as_admin.post(self.url(cluster))
        assert response.status_code == 409
        assert "resnet-train" in response.content.decode()
        assert "is in use by live jobs" in response.content.decode()
        cluster.refresh_from_db()
        assert not cluster.retired
        attempt.ended_at = attempt.created_at
        attempt.save()
        assert as_admin.post(self.url(cluster)).status_code == 302
        cluster.refresh_from_db()
        assert cluster.retired


def test_chinese_page(as_admin):
    cluster = ClusterFactory()
    with translation.override("zh-hans"):
        headers = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
        page = as_admin.get(f"/settings/inventory/clusters/{cluster.pk}/", **headers)
        listing = as_admin.get("/settings/inventory/clusters/", **headers)
        bad = as_admin.post(NEW, token_data(api_url="http://x"), **headers)
    text = page.content.decode()
    for words in ("测试连接", "立即同步节点", "连接", "命名空间"):
        assert words in text, words
    assert "Test connection" not in text
    assert "集群" in listing.content.decode()
    assert "https://" in " ".join(bad.context["form"].errors["api_url"])
    assert "Use an https:// address" not in bad.content.decode()


def test_hostile_kubeconfigs_are_field_errors(as_admin):
    for text in ("[" * 5000, "a: &a [*a, *a]\ncontexts: *a", "x" * 300_000):
        response = as_admin.post(NEW, kubeconfig_data(kubeconfig=text))
        assert "kubeconfig" in errors_of(response) or "context" in errors_of(response)


def test_secrets_stay_out_of_error_reports_and_logs(as_admin, caplog):
    """A crash report (the mail to admins) masks them; nothing the form logs names them."""
    from django.views.debug import SafeExceptionReporterFilter

    response = as_admin.post(NEW, token_data(namespace="Bad", token=TOKEN))
    request = response.wsgi_request
    reported = SafeExceptionReporterFilter().get_post_parameters(request)
    assert reported["token"] != TOKEN and TOKEN not in str(dict(reported))
    as_admin.post(NEW, token_data())
    assert TOKEN not in caplog.text
    cluster = Cluster.objects.get()
    assert TOKEN not in repr(cluster.__dict__)  # only sealed
