"""Every name a user types into the inventory and the catalog: a length and a character
rule, chosen by what the name becomes, with one clear field message and nothing lost."""

from __future__ import annotations

import html

import pytest

from console import names
from console.sharing import Access
from resources.forms.catalog import FOLDER
from tests.resources.catalog_factories import make_item

pytestmark = pytest.mark.django_db

BAD = {
    "over-long": "a" * 307,
    "space": "my name",
    "slash": "team/name",
    "unicode": "gpü-1",
    "nul": "bad\0name",
}

# (inventory kind, field, its rule)
INVENTORY = [
    ("accelerators", "name", names.LABEL_VALUE),
    ("drivers", "version", names.LABEL_VALUE),
    ("specs", "name", names.LABEL_VALUE),
    ("pools", "name", names.LABEL_VALUE),
    ("nodes", "name", names.NODE_NAME),
    ("images", "name", names.LABEL_VALUE),
    ("images", "reference", names.IMAGE_REFERENCE),
    ("clusters", "name", names.LABEL_VALUE),
    ("clusters", "namespace", names.KUBERNETES_NAME),
    ("clusters", "queue", names.KUBERNETES_NAME),
    ("clusters", "storage_claim", names.OBJECT_NAME),
]


def assert_refused(response, field: str, rule: names.NameRule, typed: str) -> None:
    assert response.status_code == 422
    expected = rule.problem("")
    assert expected in response.context["form"].errors[field]
    content = response.content.decode()
    error = content.split(f'id="id_{field}_error"', 1)[1].split("\n  </div>", 1)[0]
    assert f"<div>{html.escape(expected)}</div>" in error
    if "\0" not in typed:  # what was typed is on the page again
        assert f'value="{html.escape(typed)}"' in content


@pytest.mark.parametrize(("kind", "field", "rule"), INVENTORY)
@pytest.mark.parametrize("case", list(BAD))
def test_inventory_names(client, admin, kind, field, rule, case):
    client.force_login(admin)
    typed = BAD[case]
    if field == "reference" and case == "slash":
        typed = "team//name"  # one slash separates a reference's path: two do not
    response = client.post(f"/settings/inventory/{kind}/new/", {field: typed})
    assert_refused(response, field, rule, typed)


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("pools", {"name": "vision.reserved_2"}),
        ("accelerators", {"name": "NVIDIA-A100-SXM4-80GB", "kind": "GPU", "memory_gib": 80}),
        ("drivers", {"kind": "GPU", "version": "535.104.05"}),
    ],
)
def test_good_inventory_names_are_saved(client, admin, kind, data):
    client.force_login(admin)
    response = client.post(f"/settings/inventory/{kind}/new/", data)
    assert response.status_code == 302, response.context["form"].errors


@pytest.mark.parametrize(
    ("rule", "good", "bad"),
    [
        (names.LABEL_VALUE, ["a", "A100", "gpu_1.x", "x" * 63], ["-a", "a.", "x" * 64, "é"]),
        (
            names.NODE_NAME,
            ["node-1", "gpu.rack-2.example", "a" * 63],
            ["Node-1", "node_1", "-node", "node.", "a..b", "a" * 254],
        ),
        (names.DNS_LABEL, ["dev", "resnet-dev", "a" + "1" * 39], ["1dev", "dev-", "Dev", "a" * 41]),
        (
            names.IMAGE_REFERENCE,
            [
                "pytorch",
                "console.local/pytorch:2-cpu",
                "registry.example.com:5000/team/py_torch:2.3",
                "nvcr.io/nvidia/pytorch@sha256:" + "a" * 64,
            ],
            ["PyTorch", "pytorch:", "a b", "registry//x", "x:" + "t" * 129, "/pytorch"],
        ),
        (
            names.KUBERNETES_NAME,
            ["default", "team-a", "q1", "a" * 63],
            ["Team", "team_a", "-a", "a-", "a.b", "a" * 64],
        ),
        (
            names.OBJECT_NAME,
            ["console-storage", "pvc.v2", "a" * 253],
            ["PVC", "pvc_1", "pvc.", "a..b", "a" * 254],
        ),
        (
            names.EXTENDED_RESOURCE,
            ["nvidia.com/gpu", "huawei.com/Ascend910", "cambricon.com/mlu", "vendor/x_1.a"],
            [
                "gpu",
                "nvidia.com/",
                "/gpu",
                "Nvidia.com/gpu",
                "kubernetes.io/gpu",
                "a.kubernetes.io/x",
                "nvidia.com/" + "g" * 64,
                "nvidia.com/gpu 1",
            ],
        ),
        (FOLDER, ["cifar10", "v2", "_x", "-x", "a.b"], [".hidden", "a/b", "a b", "x" * 64]),
    ],
)
def test_rules(rule, good, bad):
    assert [name for name in good if rule.problem(name)] == []
    assert [name for name in bad if not rule.problem(name)] == []


class TestCatalog:
    @pytest.mark.parametrize("case", list(BAD))
    def test_item_names(self, client, alice, vision, case):
        client.force_login(alice)
        typed = BAD[case]
        response = client.post(
            "/catalog/datasets/new/",
            {"name": typed, "project": vision.pk, "others_access": Access.READ_ONLY,
             "path": "datasets/x"},
        )  # fmt: skip
        assert_refused(response, "name", FOLDER, typed)

    @pytest.mark.parametrize("case", list(BAD))
    def test_version_names(self, client, alice, vision, case):
        dataset = make_item("datasets", owner=alice, project=vision)
        client.force_login(alice)
        typed = BAD[case]
        response = client.post(
            f"/catalog/datasets/{dataset.pk}/versions/new/", {"name": typed, "path": ""}
        )
        assert_refused(response, "name", FOLDER, typed)
