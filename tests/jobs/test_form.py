"""The job form: every rule of SPEC J gives a field-level error and loses nothing typed."""

import json
import re

import pytest

from console import limits
from jobs.models import Job, JobEvent, Priority, Status
from tests.jobs.factories import JobFactory
from tests.resources.factories import (
    NodeFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_alice(client, alice):
    client.force_login(alice)
    return client


def post(client, data):
    return client.post("/jobs/new/", data)


def errors(response) -> dict:
    assert response.status_code == 422, response.status_code
    return {
        field: " ".join(messages) for field, messages in response.context["form"].errors.items()
    }


def test_valid_job_is_queued_with_an_event_and_access(as_alice, job_post, alice):
    response = post(as_alice, job_post(others_access="read_only"))
    job = Job.objects.get()
    assert response["Location"] == f"/jobs/{job.pk}/"
    assert (job.status, job.owner, job.project.slug) == (Status.QUEUED, alice, "vision")
    assert JobEvent.objects.filter(job=job).count() == 1
    assert job.ordered_specs()[0].name == "cpu-4"


def test_form_renders_for_a_member(as_alice, inventory, catalog):
    response = as_alice.get("/jobs/new/")
    assert response.status_code == 200
    body = response.content.decode()
    for name in ("cpu-4", "a100x1", "resnet", "pytorch"):
        assert name in body
    assert "notebook" not in body  # not a training image
    assert 'value="2"' not in body.split('name="priority"')[1].split("</select>")[0]


def test_the_prediction_is_asked_again_at_the_set_period(as_alice, inventory, settings):
    def trigger() -> str:
        body = as_alice.get("/jobs/new/").content.decode()
        return re.search(r'data-testid="prediction"[^>]*hx-trigger="([^"]*)"', body)[1]

    assert trigger().endswith("every 15s")
    settings.PREDICTION_REFRESH_SECONDS = 4
    assert trigger().endswith("every 4s")


# Each refused field, with words of its message; tests/jobs/test_api.py sends the same
# through the API and expects the same words on the same fields.
REFUSALS = [
    ({"name": "Bad_Name"}, "name", "lowercase letters"),
    ({"name": "x" * 41}, "name", "at most 40"),
    (
        {"command": "KEY=VALUE python3 train.py"},
        "command",
        'bash -c "KEY=VALUE python3 train.py"',
    ),
    ({"command": "python3 train.py && python3 evaluate.py"}, "command", "bash -c"),
    ({"command": ""}, "command", "Enter the command"),
    ({"algorithm": ""}, "algorithm", "Pick the algorithm"),
    ({"node_count": "3"}, "node_count", "single-node job runs on one node"),
    ({"ps_count": "2", "mode": "pytorch"}, "ps_count", "TensorFlow jobs only"),
    ({"priority": "2"}, "priority", "Select a valid choice"),
    ({"output_path": "../../etc"}, "output_path", "inside the storage"),
    ({"output_path": "/abs"}, "output_path", "inside the storage"),
    ({"specs": None}, "specs", "required"),
    ({"duration_hours": "5"}, "duration_hours", "Select a valid choice"),
    (
        {"resume_enabled": "on", "fault_restart_enabled": "on", "max_restarts": "1"},
        "fault_restart_enabled",
        "exclude each other",
    ),
    ({"resume_enabled": "on", "max_resumes": "1"}, "pool", "needs a dedicated pool"),
    ({"fault_restart_enabled": "on", "max_restarts": "99"}, "max_restarts", "At most 3"),
    ({"fault_restart_enabled": "on"}, "max_restarts", "Give the max restarts"),
    ({"graceful_shutdown_seconds": "9999"}, "graceful_shutdown_seconds", "At most 600"),
    ({"elastic": "on"}, "resume_enabled", "part of checkpoint resume"),
    ({"node_names": ["nope"]}, "node_names", "Select a valid choice"),
]


@pytest.mark.parametrize(("overrides", "field", "message"), REFUSALS)
def test_rules_are_field_errors(as_alice, job_post, overrides, field, message):
    response = post(as_alice, job_post(**overrides))
    found = errors(response)
    assert field in found and message in found[field], found
    assert not Job.objects.exists()
    # What was typed is still in the form.
    assert response.context["form"]["name"].value() == job_post(**overrides)["name"]


def test_resume_rules_with_a_pool(as_alice, job_post, inventory):
    base = {"resume_enabled": "on", "pool": inventory["pool"].pk, "max_resumes": "9"}
    assert "At most 3" in errors(post(as_alice, job_post(**base)))["max_resumes"]
    batch = errors(
        post(
            as_alice,
            job_post(
                **base,
                job_type="batch",
                subtask_count="1",
                subtask_0_algorithm="",
                subtask_0_command="x",
            ),
        )
    )
    assert "Only regular jobs" in batch["resume_enabled"]
    elastic = errors(
        post(
            as_alice,
            job_post(
                **{**base, "max_resumes": "1"},
                elastic="on",
                elastic_min_nodes="4",
                mode="pytorch",
                node_count="2",
            ),
        )
    )
    assert "At most the node count (2)" in elastic["elastic_min_nodes"]
    perf = errors(post(as_alice, job_post(**{**base, "max_resumes": "1"}, perf_detection="on")))
    assert "threshold" in perf["perf_threshold"] and "Pick what happens" in perf["perf_policy"]
    ok = post(as_alice, job_post(**{**base, "max_resumes": "2"}))
    assert ok.status_code == 302
    assert Job.objects.get().max_resumes == 2


def test_image_board_type_must_match_every_spec(as_alice, job_post, inventory):
    found = errors(post(as_alice, job_post(image=inventory["gpu_image"].pk)))
    assert "not on the CPU of cpu-4" in found["image"]


def test_image_must_be_for_training(as_alice, job_post, inventory):
    found = errors(post(as_alice, job_post(image=inventory["dev_image"].pk)))
    assert "Select a valid choice" in found["image"]


def test_node_names_exclude_driver_and_pool(as_alice, job_post, inventory):

    NodeFactory(name="n1")
    found = errors(post(as_alice, job_post(node_names=["n1"], pool=inventory["pool"].pk)))
    assert "not both" in found["node_names"]


def test_driver_only_for_gpu_and_mlu_specs(as_alice, job_post, inventory):
    found = errors(post(as_alice, job_post(driver_version=inventory["driver"].pk)))
    assert "GPU and MLU specs only" in found["driver_version"]
    ok = post(
        as_alice, job_post(driver_version=inventory["driver"].pk, specs=[inventory["gpu"].pk])
    )
    assert ok.status_code == 302


def test_urgent_cap_per_project(as_alice, job_post, alice, vision, admin):
    limits.save({"urgent_jobs_per_project": 1}, admin)
    JobFactory(owner=alice, project=vision, priority=Priority.URGENT)
    found = errors(post(as_alice, job_post(priority="1")))
    assert "already holds 1 urgent job " in found["priority"]


def test_very_urgent_is_for_admins(client, admin, job_post, vision):
    from tests.factories import MembershipFactory

    MembershipFactory(project=vision, user=admin)
    client.force_login(admin)
    response = post(client, job_post(priority="2", algorithm=""))
    assert "priority" not in response.context["form"].errors


def test_sharing_off_allows_only_none(as_alice, job_post, admin):
    limits.save({"sharing_enabled": False}, admin)
    found = errors(post(as_alice, job_post(others_access="read_write")))
    assert "Select a valid choice" in found["others_access"]


def test_access_may_not_exceed_the_mounted_resources(as_alice, job_post, catalog):
    data = job_post(
        others_access="read_write",
        dataset_count="1",
        dataset_0_version=catalog["bob_dataset"].pk,
        dataset_0_read_only="on",
    )
    found = errors(post(as_alice, data))
    assert "may only read imagenet" in found["others_access"]
    ok = post(as_alice, {**data, "others_access": "read_only"})
    assert ok.status_code == 302


def test_data_preparation_needs_read_only_datasets(as_alice, job_post, catalog):
    data = job_post(data_prep="on", dataset_count="1", dataset_0_version=catalog["my_dataset"].pk)
    assert "must be mounted read-only" in errors(post(as_alice, data))["dataset_0_read_only"]


def test_name_unique_among_live_jobs_only(as_alice, job_post, alice, vision):
    JobFactory(owner=alice, project=vision, name="train-1")
    assert "already have a queued or running job" in errors(post(as_alice, job_post()))["name"]
    Job.objects.update(status=Status.SUCCEEDED, phase="succeeded")
    assert post(as_alice, job_post()).status_code == 302


def test_tampered_ids_are_field_errors_never_500(as_alice, job_post, charlie, speech):
    from tests.resources.catalog_factories import AlgorithmFactory

    foreign = AlgorithmFactory(owner=charlie, project=speech, others_access="read_write")
    for overrides in [
        {"algorithm": foreign.pk},
        {"specs": ["999999"]},
        {"image": "abc"},
        {"pool": "424242"},
        {"node_count": "100000"},
        {"node_count": "-1"},
        {"dataset_count": "1", "dataset_0_version": "77777"},
        {"volumes": ["x"]},
        {"job_type": "batch", "subtask_count": "zzz"},
        {"ps_count": "1e9"},
    ]:
        response = post(as_alice, job_post(**overrides))
        assert response.status_code == 422, overrides
    assert not Job.objects.exists()


def test_batch_job_with_subtasks(as_alice, job_post, catalog):
    data = job_post(
        job_type="batch",
        subtask_count="2",
        command=None,
        subtask_0_algorithm=catalog["algorithm"].pk,
        subtask_0_command="python a.py",
        subtask_1_algorithm=catalog["algorithm"].pk,
        subtask_1_command="KEY=1 python b.py",
    )
    assert "bash -c" in errors(post(as_alice, data))["subtask_1_command"]
    data["subtask_1_command"] = "python b.py"
    assert post(as_alice, data).status_code == 302
    job = Job.objects.get()
    assert [t.command for t in job.subtasks.all()] == ["python a.py", "python b.py"]


def test_row_buttons_work_without_javascript(as_alice, job_post, catalog):
    data = job_post(
        dataset_count="1", dataset_0_version=catalog["my_dataset"].pk, row_action="add_dataset"
    )
    response = post(as_alice, data)
    assert response.status_code == 200
    assert response.context["form"].dataset_count == 2
    assert not Job.objects.exists()
    removed = post(as_alice, {**data, "dataset_count": "2", "row_action": "remove_dataset:0"})
    assert removed.context["form"].dataset_count == 1


@pytest.mark.parametrize(
    "action", ["remove_dataset:\u00b2", "remove_dataset:-1", "remove_dataset:" + "9" * 30]
)
def test_a_row_button_naming_no_row_changes_nothing(as_alice, job_post, catalog, action):
    data = job_post(dataset_count="1", dataset_0_version=catalog["my_dataset"].pk)
    response = as_alice.post("/jobs/new/refresh/", {**data, "row_action": action})
    assert response.status_code == 200
    assert response.context["form"].dataset_count == 1


def test_refresh_shows_dependent_parts(as_alice, job_post):
    response = as_alice.post("/jobs/new/refresh/", job_post(mode="tensorflow", resume_enabled="on"))
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="job-form-body"' in body and "<html" not in body
    assert 'name="ps_count"' in body and 'type="number"' in body
    assert 'data-testid="resume-options"' in body
    assert "invalid-feedback" not in body  # a refresh never shows errors
    # The fields were disabled while it was asked: the prediction asks again once it is back.
    assert json.loads(response["HX-Trigger-After-Settle"]) == {"form-refreshed": {}}


def test_clone_prefills_the_form(as_alice, alice, vision, inventory):
    job = JobFactory(owner=alice, project=vision, name="orig", specs=[inventory["gpu"]])
    response = as_alice.get(f"/jobs/{job.pk}/clone/")
    form = response.context["form"]
    assert form["name"].value() == "orig-copy"
    assert list(form["specs"].value()) == [inventory["gpu"].pk]


def test_a_second_save_of_the_same_form_is_already_submitted(alice, vision, job_post, admin):
    # What a concurrent identical submit meets once past the form's checks (see
    # test_concurrency.py for the real race): nothing saved, not an IntegrityError.
    from jobs.forms.job import JobForm
    from jobs.operations import UrgentCapReached
    from jobs.services import AlreadySubmitted, create_job

    limits.save({"urgent_jobs_per_project": 1}, admin)
    form = JobForm(job_post(priority="1"), user=alice, project=vision)
    assert form.is_valid(), form.errors
    create_job(form.cleaned_data, user=alice, project=vision, form=form)
    with pytest.raises(UrgentCapReached):
        create_job(form.cleaned_data, user=alice, project=vision, form=form)
    normal = {**form.cleaned_data, "priority": Priority.NORMAL}
    with pytest.raises(AlreadySubmitted):
        create_job(normal, user=alice, project=vision, form=form)
    assert Job.objects.count() == 1


def test_over_the_submission_limit_the_form_comes_back_as_typed(as_alice, job_post, settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "submit": (1, 60)}
    assert post(as_alice, job_post(name="first")).status_code == 302
    response = post(as_alice, job_post(name="second", command="python keep-me.py"))
    assert response.status_code == 429 and response["Retry-After"]
    page = response.content.decode()
    assert 'value="second"' in page and "keep-me.py" in page
    assert "Too many job submissions" in page
    assert not Job.objects.filter(name="second").exists()


def test_hang_detection_alert_for_any_job_reschedule_needs_a_recovery(
    as_alice, job_post, inventory, alice, vision
):
    body = as_alice.get("/jobs/new/").content.decode()
    assert 'name="hang_policy"' in body and "10 × its median iteration time" in body
    refused = post(as_alice, job_post(hang_policy="reschedule", command="python keep-me.py"))
    assert "needs checkpoint resume or fault restart" in errors(refused)["hang_policy"]
    assert refused.context["form"]["command"].value() == "python keep-me.py"  # nothing lost
    assert post(as_alice, job_post(hang_policy="alert")).status_code == 302
    assert Job.objects.get().hang_policy == "alert"
    restarting = job_post(
        name="train-2", hang_policy="reschedule", fault_restart_enabled="on", max_restarts="1"
    )
    assert post(as_alice, restarting).status_code == 302
    job = Job.objects.get(name="train-2")
    assert job.hang_policy == "reschedule"
    form = as_alice.get(f"/jobs/{job.pk}/clone/").context["form"]
    assert form["hang_policy"].value() == "reschedule"
    assert post(as_alice, job_post(name="train-3")).status_code == 302
    assert Job.objects.get(name="train-3").hang_policy == ""


def test_the_three_lifecycle_scripts_are_saved_shown_and_cloned(as_alice, job_post):
    """SPEC J23: shell text, as typed (a command's rules do not apply: pipes, redirections and
    variables are what a script is for)."""
    scripts = {
        "lifecycle_before_start": 'pip download -d "$HOME/w" x | tee log.txt && echo ok',
        "lifecycle_on_failure": "tar czf /workspace/outputs/crash.tgz /tmp/*.log || true",
        "lifecycle_after_stop": 'echo "done at $(date)" >> /workspace/outputs/done.txt',
    }
    assert post(as_alice, job_post(**scripts)).status_code == 302
    job = Job.objects.get()
    assert {name: getattr(job, name) for name in scripts} == scripts
    page = as_alice.get(job.get_absolute_url()).content.decode()
    assert "tar czf /workspace/outputs/crash.tgz /tmp/*.log || true" in page
    form = as_alice.get(f"/jobs/{job.pk}/clone/").context["form"]
    assert {name: form[name].value() for name in scripts} == scripts


@pytest.mark.parametrize("value", ["²", "9" * 5000, "a\x00b", "x" * 300])
@pytest.mark.parametrize("url", ["/jobs/new/", "/jobs/new/refresh/"])
def test_anything_posted_in_every_field_gets_the_form_back(client, alice, url, value):
    """The form reads the pool and pinned nodes before validating them (to mark images
    without a local runtime): a value no database query can take must not fail it."""
    from tests.fuzz import surface

    client.force_login(alice)
    answer = client.post(url, dict.fromkeys(surface.JOB_FORM, value))
    assert answer.status_code in (200, 422), answer.status_code
    assert 'name="command"' in answer.text
