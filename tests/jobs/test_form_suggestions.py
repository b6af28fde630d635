"""The job form and an algorithm's suggested launch: shown under the algorithm, taken with
"Use these settings" (image, mode, nodes, command; nothing else), and its command filled in
when an algorithm is picked while the command is empty, never over one typed."""

from __future__ import annotations

import pytest
from django.utils import timezone

from jobs.models import DevEnvironment, Job
from resources.models import Image
from tests.jobs.factories import JobFactory
from tests.resources.catalog_factories import AlgorithmFactory
from tests.resources.factories import ImageFactory

pytestmark = pytest.mark.django_db

TF_COMMAND = "python /workspace/algorithm/train.py --steps 20"


@pytest.fixture
def as_alice(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def tf_image(db):
    return ImageFactory(name="tensorflow-2")


@pytest.fixture
def tf_sample(admin, tf_image):
    """A platform-wide algorithm, as the demo's tf-sample."""
    return AlgorithmFactory(
        name="tf-sample", owner=admin, project=None, suggested_image=tf_image,
        suggested_mode="tensorflow", suggested_nodes=2, suggested_command=TF_COMMAND,
    )  # fmt: skip


def refresh(client, data, action=""):
    response = client.post("/jobs/new/refresh/", {**data, "row_action": action})
    assert response.status_code == 200
    return response


def values(response, *names) -> tuple:
    form = response.context["form"]
    return tuple(str(form[name].value()) for name in names)


def box(response) -> str:
    body = response.content.decode()
    assert body.count('data-testid="suggestion"') == 1, body.count('data-testid="suggestion"')
    return body.split('data-testid="suggestion"', 1)[1].split("</button>", 1)[0]


def test_picking_an_algorithm_fills_an_empty_command(as_alice, job_post, tf_sample):
    response = refresh(as_alice, job_post(algorithm=tf_sample.pk, command=""), "algorithm_picked")
    assert values(response, "command") == (TF_COMMAND,)
    # Only the command: the rest of the suggestion waits for the button.
    assert values(response, "mode", "node_count") == ("single", "1")
    shown = box(response)
    for words in ("Suggested by tf-sample:", "image tensorflow-2", "TensorFlow", "2 nodes",
                  TF_COMMAND, 'value="use_suggestion"', "Use these settings"):  # fmt: skip
        assert words in shown, words


def test_picking_never_replaces_a_typed_command(as_alice, job_post, tf_sample):
    data = job_post(algorithm=tf_sample.pk, command="python mine.py --fast")
    response = refresh(as_alice, data, "algorithm_picked")
    assert values(response, "command") == ("python mine.py --fast",)
    # Another refresh (a mode change, say) does not fill a command cleared on purpose.
    cleared = refresh(as_alice, job_post(algorithm=tf_sample.pk, command=""))
    assert values(cleared, "command") == ("",)


def test_use_these_settings_fills_the_launch_and_keeps_the_rest(
    as_alice, job_post, tf_sample, tf_image, inventory, catalog
):
    typed = job_post(
        name="my-tf", algorithm=tf_sample.pk, command="", priority="1", output_path="",
        specs=[inventory["cpu"].pk], dataset_count="1",
        dataset_0_version=catalog["my_dataset"].pk, dataset_0_read_only="on",
        lifecycle_before_start="echo hi", debug_terminal="on",
    )  # fmt: skip
    response = refresh(as_alice, typed, "use_suggestion")
    assert values(response, "image", "mode", "node_count", "ps_count", "command") == (
        str(tf_image.pk), "tensorflow", "2", "0", TF_COMMAND,
    )  # fmt: skip
    kept = ("name", "priority", "specs", "dataset_0_version", "dataset_0_read_only",
            "lifecycle_before_start", "debug_terminal", "algorithm", "duration_hours")  # fmt: skip
    form = response.context["form"]
    assert {name: form.data.getlist(name) for name in kept} == {
        name: [str(value) for value in typed[name]] if name == "specs" else [str(typed[name])]
        for name in kept
    }
    body = response.content.decode()
    # TensorFlow's own field shows now, and the box says it is all in use.
    assert 'type="number" name="ps_count"' in body
    assert 'data-testid="suggestion-in-use"' in body and 'value="use_suggestion"' not in body
    # What the button filled in is a job the form accepts.
    filled = {**form.data.dict(), "specs": inventory["cpu"].pk}
    del filled["row_action"]
    submitted = as_alice.post("/jobs/new/", filled)
    assert submitted.status_code == 302, submitted.context["form"].errors
    job = Job.objects.get(name="my-tf")
    assert (job.mode, job.nodes_asked, job.image, job.command) == (
        "tensorflow", 2, tf_image, TF_COMMAND
    )  # fmt: skip
    assert job.datasets.count() == 1 and job.priority == 1


def test_the_button_works_without_javascript(as_alice, job_post, tf_sample, tf_image):
    # A plain POST of the whole form, with the button's name and value.
    data = job_post(algorithm=tf_sample.pk, command="", row_action="use_suggestion")
    response = as_alice.post("/jobs/new/", data)
    assert response.status_code == 200 and not Job.objects.exists()
    assert values(response, "image", "mode", "node_count") == (str(tf_image.pk), "tensorflow", "2")
    assert "<html" in response.content.decode()


def test_a_single_node_suggestion_sets_one_node_and_no_parameter_servers(
    as_alice, job_post, alice, vision, inventory
):
    resnet = AlgorithmFactory(
        owner=alice, project=vision, suggested_mode="single", suggested_command="python a.py"
    )
    data = job_post(algorithm=resnet.pk, mode="tensorflow", node_count="4", ps_count="2")
    response = refresh(as_alice, data, "use_suggestion")
    assert values(response, "mode", "node_count", "ps_count", "command", "image") == (
        "single", "1", "0", "python a.py", str(inventory["image"].pk)
    )  # fmt: skip
    shown = box(response)
    assert "image " not in shown  # it names no image: the one chosen stays
    assert "Single node" in shown and "1 node" not in shown  # said once


def test_an_algorithm_without_a_suggestion_shows_no_box(as_alice, job_post, catalog):
    response = refresh(as_alice, job_post(command=""), "algorithm_picked")
    assert 'data-testid="suggestion"' not in response.content.decode()
    assert values(response, "command") == ("",)
    unchanged = refresh(as_alice, job_post(), "use_suggestion")
    assert values(unchanged, "mode", "command") == ("single", job_post()["command"])


@pytest.mark.parametrize("why", ["retired", "not for training", "no local runtime"])
def test_an_image_the_user_may_not_pick_is_named_not_filled(
    as_alice, job_post, tf_sample, tf_image, inventory, why
):
    if why == "retired":
        Image.objects.filter(pk=tf_image.pk).update(retired_at=timezone.now())
    elif why == "not for training":
        Image.objects.filter(pk=tf_image.pk).update(scopes=[Image.Scope.DEVELOPMENT])
    else:
        Image.objects.filter(pk=tf_image.pk).update(local_runtime="")
    data = job_post(algorithm=tf_sample.pk, command="")
    shown = box(refresh(as_alice, data))
    assert "image tensorflow-2 (" in shown and "pick one yourself" in shown
    if why == "no local runtime":
        assert "no local runtime" in shown
    else:
        assert "not offered for training jobs" in shown
    response = refresh(as_alice, data, "use_suggestion")
    # The rest is taken; the image stays the one chosen.
    assert values(response, "image", "mode", "command") == (
        str(inventory["image"].pk), "tensorflow", TF_COMMAND
    )  # fmt: skip


def test_batch_rows_fill_their_own_command(as_alice, job_post, tf_sample, tf_image, catalog):
    data = job_post(
        job_type="batch", subtask_count="2", subtask_0_algorithm=tf_sample.pk,
        subtask_0_command="", subtask_1_algorithm=tf_sample.pk, subtask_1_command="python b.py",
    )  # fmt: skip
    picked = refresh(as_alice, data, "algorithm_picked:0")
    assert values(picked, "subtask_0_command", "subtask_1_command") == (TF_COMMAND, "python b.py")
    body = picked.content.decode()
    assert body.count('data-testid="suggestion"') == 2
    assert 'value="use_suggestion:1"' in body
    used = refresh(as_alice, data, "use_suggestion:1")
    assert values(used, "subtask_0_command", "subtask_1_command", "mode", "image") == (
        "", TF_COMMAND, "tensorflow", str(tf_image.pk)
    )  # fmt: skip


def test_others_private_algorithms_suggest_nothing(as_alice, job_post, charlie, speech, tf_image):
    hidden = AlgorithmFactory(
        owner=charlie, project=speech, others_access="none", suggested_command="python x.py"
    )
    response = refresh(as_alice, job_post(algorithm=hidden.pk, command=""), "use_suggestion")
    assert values(response, "command") == ("",)
    assert "python x.py" not in response.content.decode()


@pytest.mark.parametrize(
    "action",
    ["use_suggestion:", "use_suggestion:x", "use_suggestion:-1", "algorithm_picked:" + "9" * 30,
     "use_suggestion:7", "use_suggestion:\u00b2"],
)  # fmt: skip
def test_an_action_naming_nothing_changes_nothing(as_alice, job_post, tf_sample, action):
    data = job_post(algorithm=tf_sample.pk, command="")
    response = refresh(as_alice, data, action)
    assert values(response, "mode", "command") == ("single", "")


def test_clone_and_dev_environment_forms_offer_it(
    as_alice, alice, vision, inventory, tf_sample, tf_image
):
    job = JobFactory(owner=alice, project=vision, name="orig", algorithm=tf_sample,
                     image=inventory["image"], specs=[inventory["cpu"]])  # fmt: skip
    page = as_alice.get(f"/jobs/{job.pk}/clone/")
    assert 'value="use_suggestion"' in box(page)
    data = {key: value for key, value in page.context["form"].initial.items() if value is not None}
    data = {**data, "specs": inventory["cpu"].pk, "row_action": "use_suggestion"}
    response = as_alice.post(f"/jobs/{job.pk}/clone/", data)
    assert response.status_code == 200
    assert response.context["cloned_from"] == job
    assert values(response, "name", "mode", "image") == (
        "orig-copy", "tensorflow", str(tf_image.pk)
    )  # fmt: skip
    env = DevEnvironment.objects.create(
        name="lab", owner=alice, project=vision, image=inventory["image"], spec=inventory["cpu"],
        algorithm=tf_sample, command="",
    )  # fmt: skip
    assert "Suggested by tf-sample:" in box(as_alice.get(f"/devenvs/{env.pk}/job/"))
