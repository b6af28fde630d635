"""An image's local runtime: the inventory form checks the folder, the list shows it, and
``path_entries`` is what the local backend puts first on PATH."""

from __future__ import annotations

import pytest

from resources.inventory import runtime_images, runtimes
from resources.models import Image
from tests.resources.factories import ImageFactory

pytestmark = pytest.mark.django_db

NEW = "/settings/inventory/images/new/"


def python_env(folder):
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").write_text("#!/bin/sh\n")
    return folder


def post(client, runtime):
    values = {"name": "torch", "reference": "r/torch:1", "scopes": ["training"],
              "board_kinds": ["CPU"], "local_runtime": runtime}  # fmt: skip
    return client.post(NEW, values)


def test_a_folder_with_a_python_is_accepted_and_listed(client, admin, tmp_path):
    folder = python_env(tmp_path / "env")
    client.force_login(admin)
    assert post(client, f"{folder}/").status_code == 302
    image = Image.objects.get()
    assert image.local_runtime == str(folder)  # one spelling: no trailing slash
    assert runtimes.path_entries(image) == [str(folder / "bin")]
    page = client.get("/settings/inventory/images/").content.decode()
    assert "Local runtime" in page and f"<code>{folder}</code>" in page
    assert str(folder) in client.get(f"/settings/inventory/images/{image.pk}/").content.decode()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing", "does not exist"),
        ("empty", "bin/python is missing"),
        ("relative", "absolute path"),
    ],
)
def test_a_folder_without_a_python_is_a_field_error(client, admin, tmp_path, name, message):
    (tmp_path / "empty").mkdir()
    runtime = {"missing": str(tmp_path / "nowhere"), "empty": str(tmp_path / "empty"),
               "relative": "runtimes/torch-cpu"}[name]  # fmt: skip
    client.force_login(admin)
    response = post(client, runtime)
    assert response.status_code == 422
    errors = response.context["form"].errors
    assert list(errors) == ["local_runtime"] and message in errors["local_runtime"][0]
    assert not Image.objects.exists()


def test_blank_means_this_machines_nodes_cannot_run_it_and_the_admin_sees_why(client, admin):
    client.force_login(admin)
    assert post(client, "").status_code == 302
    image = Image.objects.get()
    assert runtimes.path_entries(image) == [] and runtimes.path_entries(None) == []
    page = client.get("/settings/inventory/images/").content.decode()
    assert "This image has no local runtime: this machine&#x27;s nodes cannot run its jobs" in page


def test_the_demo_image_gets_a_ready_runtime_once(tmp_path):
    folder = python_env(tmp_path / "torch-cpu")
    demo = ImageFactory(name=runtimes.DEMO_IMAGE, local_runtime="")
    chosen = ImageFactory(name="other", local_runtime="/elsewhere")
    assert runtime_images.attach_to_demo_image(folder) == 0  # not stamped: half made
    (folder / runtimes.STAMP).write_text("torch-cpu from-an-older-recipe\n")
    assert runtime_images.attach_to_demo_image(folder) == 0  # made for another recipe: made again
    (folder / runtimes.STAMP).write_text(f"{runtimes.stamp_line(runtimes.TORCH)}\n")
    assert runtime_images.attach_to_demo_image(folder) == 1
    assert runtime_images.attach_to_demo_image(tmp_path / "another") == 0
    demo.refresh_from_db()
    chosen.refresh_from_db()
    assert (demo.local_runtime, chosen.local_runtime) == (str(folder), "/elsewhere")


def test_each_demo_image_gets_its_own_runtime(tmp_path):
    made = {}
    for definition in runtimes.RUNTIMES:
        made[definition.name] = python_env(tmp_path / definition.name)
        (made[definition.name] / runtimes.STAMP).write_text(runtimes.stamp_line(definition))
    for name in ("pytorch-2", "notebook", "tensorflow-2", "deepspeed"):
        ImageFactory(name=name, local_runtime="")
    for definition in runtimes.RUNTIMES:
        runtime_images.attach(definition, made[definition.name])
    chosen = dict(Image.objects.values_list("name", "local_runtime"))
    assert chosen == {
        "pytorch-2": str(made["torch-cpu"]), "notebook": str(made["torch-cpu"]),
        "tensorflow-2": str(made["tensorflow-cpu"]), "deepspeed": str(made["deepspeed-cpu"]),
    }  # fmt: skip
