"""An algorithm's suggested launch in the catalog: its owner sets it on the algorithm's form
(checked by the job form's rules for node counts and commands), and everyone who sees the
algorithm sees it."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from console.sharing import Access
from resources.models import Algorithm, Image
from tests.resources.catalog_factories import AlgorithmFactory
from tests.resources.factories import ImageFactory

pytestmark = pytest.mark.django_db

COMMAND = "python /workspace/algorithm/train.py --steps 20"


@pytest.fixture
def tensorflow(db):
    return ImageFactory(name="tensorflow-2")


def algorithm_data(vision, **overrides) -> dict:
    data = {
        "name": "tf-mine",
        "description": "",
        "project": vision.pk,
        "others_access": Access.READ_ONLY,
        "path": "users/alice/algorithms/tf-mine",
        "suggested_image": "",
        "suggested_mode": "",
        "suggested_nodes": "",
        "suggested_command": "",
    }
    data.update(overrides)
    return data


def test_the_owner_saves_it_and_everyone_sees_it(client, alice, bob, vision, tensorflow):
    client.force_login(alice)
    form = client.get("/catalog/algorithms/new/").content.decode()
    assert 'data-testid="suggested-launch"' in form and "Suggested launch" in form
    data = algorithm_data(
        vision,
        suggested_image=tensorflow.pk,
        suggested_mode="tensorflow",
        suggested_nodes="2",
        suggested_command=f"  {COMMAND} ",
    )
    response = client.post("/catalog/algorithms/new/", data)
    assert response.status_code == 302, response.context["form"].errors
    algorithm = Algorithm.objects.get(name="tf-mine")
    assert (algorithm.suggested_image, algorithm.suggested_mode, algorithm.suggested_nodes) == (
        tensorflow, "tensorflow", 2
    )  # fmt: skip
    assert algorithm.suggested_command == COMMAND
    client.force_login(bob)  # a member it is shared with, read-only
    page = client.get(algorithm.get_absolute_url()).content.decode()
    launch = page.split('data-testid="suggested-launch"', 1)[1].split("</section>", 1)[0]
    shown = {
        part: re.search(rf'data-testid="suggested-{part}">\s*(.*?)\s*</dd>', launch, re.S)[1]
        for part in ("image", "mode", "nodes", "command")
    }
    assert shown == {
        "image": "tensorflow-2",
        "mode": "TensorFlow",
        "nodes": "2",
        "command": f'<code class="text-break">{COMMAND}</code>',
    }
    assert client.get(f"/catalog/algorithms/{algorithm.pk}/edit/").status_code == 403


def test_a_bad_node_count_is_a_field_error_and_keeps_what_was_typed(client, alice, vision):
    algorithm = AlgorithmFactory(owner=alice, project=vision, name="mine")
    client.force_login(alice)
    typed = algorithm_data(
        vision, name="mine", path=algorithm.path, suggested_mode="single",
        suggested_nodes="3", suggested_command="python train.py",
    )  # fmt: skip
    response = client.post(f"/catalog/algorithms/{algorithm.pk}/edit/", typed)
    assert response.status_code == 422
    form = response.context["form"]
    assert list(form.errors) == ["suggested_nodes"]
    assert "single-node job runs on one node" in form.errors["suggested_nodes"][0]
    assert (form["suggested_nodes"].value(), form["suggested_command"].value()) == (
        "3", "python train.py"
    )  # fmt: skip
    body = response.content.decode()
    assert 'id="id_suggested_nodes_error"' in body and 'href="#id_suggested_nodes"' in body
    # The page's own parts show what is stored, not what failed.
    assert Algorithm.objects.get(pk=algorithm.pk).suggested_nodes is None
    zero = client.post(
        f"/catalog/algorithms/{algorithm.pk}/edit/", {**typed, "suggested_nodes": "0"}
    )
    assert zero.context["form"].errors == {
        "suggested_nodes": ["Ensure this value is greater than or equal to 1."]
    }
    fixed = client.post(
        f"/catalog/algorithms/{algorithm.pk}/edit/", {**typed, "suggested_nodes": "1"}
    )
    assert fixed.status_code == 302
    assert Algorithm.objects.get(pk=algorithm.pk).suggested_nodes == 1


@pytest.mark.parametrize(
    ("language", "words"),
    [("en", "joins or redirects commands"), ("zh-hans", "用于连接或重定向命令")],
)
def test_a_suggested_command_the_job_form_would_refuse_is_refused_with_its_fix(
    client, alice, vision, language, words
):
    algorithm = AlgorithmFactory(owner=alice, project=vision, name="mine")
    client.force_login(alice)
    typed = algorithm_data(
        vision, name="mine", path=algorithm.path,
        suggested_command="cd /workspace/algorithm && python train.py",
    )  # fmt: skip
    response = client.post(
        f"/catalog/algorithms/{algorithm.pk}/edit/", typed, HTTP_ACCEPT_LANGUAGE=language
    )
    assert response.status_code == 422
    form = response.context["form"]
    assert list(form.errors) == ["suggested_command"]
    [message] = form.errors["suggested_command"]
    assert words in message
    # The fix the job form would offer, ready to paste; what was typed is kept.
    assert 'bash -c "cd /workspace/algorithm && python train.py"' in message
    assert form["suggested_command"].value() == typed["suggested_command"]
    assert Algorithm.objects.get(pk=algorithm.pk).suggested_command == ""


def test_images_on_offer_are_for_training_and_keep_a_retired_choice(
    client, alice, vision, tensorflow
):
    notebook = ImageFactory(name="notebook", scopes=[Image.Scope.DEVELOPMENT])
    old = ImageFactory(name="pytorch-1", retired_at=timezone.now())
    other_old = ImageFactory(name="caffe", retired_at=timezone.now())
    algorithm = AlgorithmFactory(owner=alice, project=vision, suggested_image=old)
    client.force_login(alice)
    response = client.get(f"/catalog/algorithms/{algorithm.pk}/edit/")
    offered = set(response.context["form"].fields["suggested_image"].queryset)
    assert offered == {tensorflow, old}
    assert notebook not in offered and other_old not in offered
    page = client.get(algorithm.get_absolute_url()).content.decode()
    assert "pytorch-1" in page and "retired" in page


def test_without_a_suggestion_only_its_owner_is_told_how_to_add_one(client, alice, bob, vision):
    algorithm = AlgorithmFactory(owner=alice, project=vision)
    client.force_login(alice)
    page = client.get(algorithm.get_absolute_url()).content.decode()
    assert 'data-testid="suggested-launch"' in page and "None yet" in page
    client.force_login(bob)
    assert (
        'data-testid="suggested-launch"'
        not in client.get(algorithm.get_absolute_url()).content.decode()
    )


def test_other_kinds_have_no_suggested_launch(client, alice):
    client.force_login(alice)
    assert "Suggested launch" not in client.get("/catalog/datasets/new/").content.decode()
