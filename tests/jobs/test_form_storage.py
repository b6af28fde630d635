"""Storage belongs to someone (SPEC W, P): what a job writes to, and mounts writable, is the
user's own or shared with them read-write; each job has its own output folder by default;
resuming from another job's checkpoints happens only on purpose."""

import pytest

from console.sharing import Access
from jobs.execution import workloads
from jobs.models import Job
from resources.catalog import storage
from tests.jobs.factories import JobFactory
from tests.resources.catalog_factories import (
    DatasetFactory,
    VolumeFactory,
)

pytestmark = pytest.mark.django_db


def submit(client, user, data):
    client.force_login(user)
    return client.post("/jobs/new/", data)


def field_errors(response) -> dict:
    assert response.status_code == 422, response.status_code
    return {name: " ".join(found) for name, found in response.context["form"].errors.items()}


class TestOutputFolder:
    def test_each_job_gets_a_folder_of_its_own(self, client, alice, job_post):
        for name in ("first", "second"):
            assert submit(client, alice, job_post(name=name)).status_code == 302
        paths = {job.name: job.output_path for job in Job.objects.all()}
        first = Job.objects.get(name="first")
        assert paths["first"] == f"users/alice/outputs/first-{first.pk}"
        assert paths["first"] != paths["second"]

    def test_another_users_folder_is_refused_and_nothing_typed_is_lost(self, client, bob, job_post):
        data = job_post(
            name="steal", output_path="users/alice/outputs/resnet", command="python x.py"
        )
        response = submit(client, bob, data)
        assert field_errors(response)["output_path"] == (
            "This folder belongs to alice: you may not write there. Pick a folder in your own "
            "storage, users/bob/…, or in a volume shared with you read-write."
        )
        page = response.content.decode()
        assert 'value="users/alice/outputs/resnet"' in page and 'value="steal"' in page
        assert "python x.py" in page
        assert not Job.objects.exists()

    @pytest.mark.parametrize("path", ["outputs/alice", "datasets/x", "users"])
    def test_platform_folders_are_for_admins(self, client, alice, admin, job_post, path):
        assert (
            "Only platform admins"
            in field_errors(submit(client, alice, job_post(output_path=path)))["output_path"]
        )
        assert submit(client, admin, job_post(name="adm", output_path=path)).status_code == 302

    def test_a_volume_shared_read_write_is_writable(self, client, alice, bob, vision, job_post):
        VolumeFactory(
            owner=alice, project=vision, name="team", path="users/alice/team",
            others_access=Access.READ_WRITE,
        )  # fmt: skip
        response = submit(client, bob, job_post(output_path="users/alice/team/run-1"))
        assert response.status_code == 302
        assert Job.objects.get().output_path == "users/alice/team/run-1"

    def test_a_read_only_share_is_not_writable(self, client, alice, bob, vision, job_post):
        DatasetFactory(
            owner=alice, project=vision, name="cifar", path="users/alice/cifar",
            others_access=Access.READ_ONLY,
        )  # fmt: skip
        errors = field_errors(submit(client, bob, job_post(output_path="users/alice/cifar/out")))
        assert "“cifar” (alice's) is shared with you read-only" in errors["output_path"]

    def test_two_live_jobs_never_share_a_folder(self, client, alice, vision, job_post):
        JobFactory(owner=alice, project=vision, name="busy", output_path="users/alice/out/a")
        for path in ("users/alice/out/a", "users/alice/out", "users/alice/out/a/b"):
            errors = field_errors(submit(client, alice, job_post(output_path=path)))
            assert (
                "Job busy, queued or running, writes to users/alice/out/a"
                in (errors["output_path"])
            )
        assert submit(client, alice, job_post(output_path="users/alice/out/b")).status_code == 302

    def test_checked_again_at_launch(self, alice, bob, vision):
        job = JobFactory(owner=bob, project=vision, output_path="users/alice/outputs/x")
        with pytest.raises(ValueError, match="bob may not write to the output folder"):
            workloads.build(job, 1)


class TestWritableMounts:
    def test_a_dataset_shared_read_only_must_be_mounted_read_only(
        self, client, alice, catalog, job_post
    ):
        version = catalog["bob_dataset"]  # bob's, shared read-only, a favourite of alice's
        data = job_post(dataset_count="1", dataset_0_version=str(version.pk))
        errors = field_errors(submit(client, alice, data))
        assert errors["dataset_0_read_only"] == (
            "You may only read “imagenet” (bob's): mount it read-only."
        )
        data["dataset_0_read_only"] = "on"
        assert submit(client, alice, data).status_code == 302

    def test_ones_own_dataset_may_be_writable(self, client, alice, catalog, job_post):
        data = job_post(dataset_count="1", dataset_0_version=str(catalog["my_dataset"].pk))
        assert submit(client, alice, data).status_code == 302

    def test_an_algorithm_shared_read_only_must_be_read_only(
        self, client, alice, bob, vision, job_post
    ):
        from tests.resources.catalog_factories import AlgorithmFactory

        theirs = AlgorithmFactory(
            owner=alice, project=vision, name="yolo", others_access=Access.READ_ONLY
        )
        data = job_post(algorithm=str(theirs.pk), algorithm_read_only=None)
        assert (
            "You may only read “yolo” (alice's)"
            in field_errors(submit(client, bob, data))["algorithm_read_only"]
        )


class TestResumeOnPurpose:
    def test_a_clone_writes_afresh_unless_asked_to_resume(self, client, alice, vision):
        job = JobFactory(owner=alice, project=vision, name="resnet", status="succeeded")
        client.force_login(alice)
        fresh = client.get(f"/jobs/{job.pk}/clone/")
        assert fresh.context["form"]["output_path"].value() == ""
        assert "does not see resnet's checkpoints" in " ".join(fresh.content.decode().split())
        resumed = client.get(f"/jobs/{job.pk}/clone/?resume=1")
        assert resumed.context["form"]["output_path"].value() == job.output_path
        assert "resumes from the checkpoints there" in " ".join(resumed.content.decode().split())

    def test_the_page_says_whose_checkpoints_it_continues_from(self, client, alice, vision):
        earlier = JobFactory(owner=alice, project=vision, name="resnet", status="succeeded")
        later = JobFactory(
            owner=alice, project=vision, name="resnet-more", output_path=earlier.output_path
        )
        client.force_login(alice)
        page = " ".join(client.get(f"/jobs/{later.pk}/").content.decode().split())
        assert f'continues from the files of <a href="/jobs/{earlier.pk}/">resnet</a>' in page
        client.force_login(alice)
        first = " ".join(client.get(f"/jobs/{earlier.pk}/").content.decode().split())
        assert "continues from the files" not in first


def test_personal_folders_are_safe_names(alice):
    from tests.factories import UserFactory

    assert storage.personal_folder(alice) == "users/alice"
    odd = UserFactory(username="ann@example.com")  # "@" is no folder-name character
    assert storage.personal_folder(odd) == f"users/user-{odd.pk}"
