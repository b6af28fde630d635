"""One story per job (issue 14): the page says the command as typed and, apart, what the
platform launches; the image by the name the form offered; the output folder as a link to
what the job wrote; when a finished job ended. Logs and events name the job's paths
(/workspace/...), never folders of the console's machine."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.timezone import localtime

from jobs.models import JobEvent, JobType, Mode, Phase, Status, SubTask
from resources.backends.base import job_paths
from resources.backends.local.layout import job_folders
from resources.catalog.mounts import storage_source
from resources.models import Image
from tests.jobs.execution_helpers import admit_and_launch, log_of, make_job, program, wait_for_phase
from tests.jobs.factories import JobFactory
from tests.resources.factories import AcceleratorModelFactory, ImageFactory, NodeSpecFactory

TYPED = "python /workspace/algorithm/train.py --lr=0.1 --name \"run 1\" --tag 'a<b'"


def shown(at) -> str:
    return date_format(localtime(at), "SHORT_DATETIME_FORMAT")


# --- the host folders a log names, named as the job knows them (pure) ---------------------

RUN = "/srv/console/var/runs/job-7-1"
FOLDERS = {
    f"{RUN}/worker-0": "/",
    f"{RUN}/worker-1": "/",
    "/srv/console/var/storage/users/alice/outputs/bert-7": "/workspace/outputs",
    "/srv/console/var/storage/datasets/imagenet/v2": "/workspace/dataset/private/imagenet",
}


@pytest.mark.parametrize(
    ("printed", "known"),
    [
        (f"saved {RUN}/worker-0/workspace/outputs/ckpt-3.pt", "saved /workspace/outputs/ckpt-3.pt"),
        (f"cwd={RUN}/worker-0/workspace", "cwd=/workspace"),
        (f"HOME is {RUN}/worker-0/home, tmp {RUN}/worker-0/tmp/x", "HOME is /home, tmp /tmp/x"),
        (f"'{RUN}/worker-1'", "'/'"),
        (
            "saved /srv/console/var/storage/users/alice/outputs/bert-7/ckpt-3.pt",
            "saved /workspace/outputs/ckpt-3.pt",
        ),
        (
            "reading /srv/console/var/storage/datasets/imagenet/v2/train\n",
            "reading /workspace/dataset/private/imagenet/train\n",
        ),
        # Not the folder, only a name that begins like it: left as it is.
        (f"{RUN}/worker-0x/log", f"{RUN}/worker-0x/log"),
        ("/srv/console/var/storage/users/alice/outputs/bert-70", None),
        # Inside another path or a word: not one of ours.
        (f"/mnt{RUN}/worker-0/workspace", None),
        ("step 3/10 loss 0.25", None),
    ],
)
def test_host_folders_are_named_by_the_jobs_paths(printed, known):
    assert job_paths(printed, FOLDERS) == (printed if known is None else known)


def test_nothing_to_translate_leaves_the_text_alone():
    assert job_paths(f"{RUN}/worker-0/workspace", {}) == f"{RUN}/worker-0/workspace"


def test_the_folders_of_a_workload_are_its_replicas_mounts_and_image():
    path = "/srv/runtimes/torch-cpu/bin:/usr/local/bin:/usr/bin:/bin"
    record = {
        "replicas": [
            {
                "name": "worker-0",
                "mounts": [["/s/out", "/workspace/outputs", False]],
                "env": {"PATH": path},
            },
            {"name": "worker-1", "mounts": [["/s/other", "/workspace/volume/v", True]]},
        ]
    }
    assert job_folders(record, RUN, "worker-0", "/usr/local/bin:/usr/bin:/bin") == {
        f"{RUN}/worker-0": "/",
        f"{RUN}/worker-1": "/",
        "/s/out": "/workspace/outputs",
        # The image's Python, where a container has it.
        "/srv/runtimes/torch-cpu": "/usr/local",
    }
    assert job_folders(record, RUN, "worker-1", "/usr/bin:/bin") == {
        f"{RUN}/worker-0": "/",
        f"{RUN}/worker-1": "/",
        "/s/other": "/workspace/volume/v",
    }


# --- the job page --------------------------------------------------------------------------


@pytest.fixture
def gpu_spec(db):
    model = AcceleratorModelFactory(name="Story-GPU")
    return NodeSpecFactory(name="gpu-2", boards=Decimal(2), accelerator_model=model)


def page_of(client, user, job) -> str:
    client.force_login(user)
    response = client.get(f"/jobs/{job.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def section(body: str, testid: str) -> str:
    """The inner HTML of the element with ``data-testid=testid`` (dd, details, div, span)."""
    found = re.search(rf'<(\w+)[^>]*data-testid="{testid}"[^>]*>(.*?)</\1>', body, re.S)
    assert found, testid
    return found.group(2)


def text_of(inner_html: str) -> str:
    """What a reader sees of some HTML (the words of a command are spans)."""
    return html.unescape(re.sub(r"<[^>]+>", "", inner_html))


@pytest.mark.django_db
class TestJobPage:
    def finished(self, alice, vision, spec, **fields):
        ended = timezone.now() - timedelta(minutes=5)
        return JobFactory(
            owner=alice, project=vision, specs=[spec], mode=Mode.PYTORCH, nodes_asked=2,
            command=TYPED, status=Status.SUCCEEDED, phase=Phase.SUCCEEDED,
            image=ImageFactory(name="pytorch-2", reference="registry.example.com/pt:2.4-cu12"),
            started_at=ended - timedelta(hours=1), finished_at=ended,
            deadline=ended + timedelta(hours=23), **fields,
        )  # fmt: skip

    def test_the_command_as_typed_and_apart_the_launch_command(
        self, client, alice, vision, gpu_spec
    ):
        job = self.finished(alice, vision, gpu_spec)
        body = page_of(client, alice, job)
        assert text_of(section(body, "typed-command")).count(TYPED) == 1
        launch = text_of(section(body, "launch-command"))
        assert "Launch command" in launch
        # The platform's launcher around the user's script, as the launch plan draws it.
        assert "-m torch.distributed.launch" in launch and "--nnodes=2" in launch
        assert "/workspace/algorithm/train.py" in launch
        assert "The launch per node" in html.unescape(body)

    def test_a_single_node_command_launched_as_typed_has_no_second_copy(
        self, client, alice, vision, gpu_spec
    ):
        job = JobFactory(owner=alice, project=vision, specs=[gpu_spec], mode=Mode.SINGLE,
                         command="python3 /workspace/algorithm/train.py")  # fmt: skip
        body = page_of(client, alice, job)
        assert "python3 /workspace/algorithm/train.py" in text_of(section(body, "typed-command"))
        assert 'data-testid="launch-command"' not in body

    def test_a_batch_job_shows_each_sub_tasks_command(self, client, alice, vision, gpu_spec):
        job = JobFactory(owner=alice, project=vision, specs=[gpu_spec], job_type=JobType.BATCH,
                         command="")  # fmt: skip
        for index, command in ((1, "python b.py"), (0, "python a.py")):
            SubTask.objects.create(job=job, index=index, algorithm=job.algorithm, command=command)
        typed = text_of(section(page_of(client, alice, job), "typed-command"))
        assert typed.index("sub-task 1") < typed.index("python a.py") < typed.index("sub-task 2")
        assert typed.index("sub-task 2") < typed.index("python b.py")

    def test_the_image_by_its_name_with_the_reference_beside(self, client, alice, vision, gpu_spec):
        body = page_of(client, alice, self.finished(alice, vision, gpu_spec))
        assert section(body, "image-name") == "pytorch-2"
        assert section(body, "image-reference") == "registry.example.com/pt:2.4-cu12"

    def test_the_output_folder_links_to_what_the_job_wrote(self, client, alice, vision, gpu_spec):
        job = self.finished(alice, vision, gpu_spec)
        body = page_of(client, alice, job)
        link = re.search(r'<a[^>]*href="([^"]+)"[^>]*data-testid="output-link">([^<]+)</a>', body)
        assert link.groups() == (f"/jobs/{job.pk}/outputs/", job.output_path)

    def test_a_finished_job_says_when_it_ended(self, client, alice, vision, gpu_spec):
        job = self.finished(alice, vision, gpu_spec)
        body = page_of(client, alice, job)
        assert section(body, "ended-at").strip() == f"Ended at {shown(job.finished_at)}"
        assert "ends by" not in body

    @pytest.mark.parametrize("phase", [Phase.ERROR, Phase.STOPPED, Phase.EXPIRED])
    def test_every_end_says_ended_at(self, client, alice, vision, gpu_spec, phase):
        job = self.finished(alice, vision, gpu_spec)
        job.phase, job.status = phase, Status(phase)
        job.save(update_fields=["phase", "status"])
        assert "Ended at" in section(page_of(client, alice, job), "ended-at")

    def test_a_running_job_says_when_it_ends_at_the_latest(self, client, alice, vision, gpu_spec):
        now = timezone.now()
        job = JobFactory(owner=alice, project=vision, specs=[gpu_spec], status=Status.RUNNING,
                         phase=Phase.RUNNING, started_at=now,
                         deadline=now + timedelta(hours=24))  # fmt: skip
        body = page_of(client, alice, job)
        assert section(body, "ends-by") == f"ends by {shown(job.deadline)}"
        assert 'data-testid="ended-at"' not in body


# --- what the job wrote ----------------------------------------------------------------------


@pytest.mark.django_db
class TestOutputs:
    @pytest.fixture
    def job(self, alice, vision):
        job = JobFactory(owner=alice, project=vision)
        folder = storage_source(job.output_path)
        (folder / "logs").mkdir(parents=True)
        (folder / "checkpoint-3.pt").write_bytes(b"x" * 2048)
        (folder / "logs" / "train.log").write_text("epoch 1\n")
        return job

    def test_the_folder_lists_folders_first_then_files(self, client, alice, job):
        client.force_login(alice)
        body = client.get(f"/jobs/{job.pk}/outputs/").content.decode()
        assert section(body, "outputs-path") == "/workspace/outputs"
        assert body.index("logs/") < body.index("checkpoint-3.pt")
        assert "2.0\xa0KB" in body
        assert job.output_path in body

    def test_a_sub_folder_and_a_file(self, client, alice, job):
        client.force_login(alice)
        body = client.get(f"/jobs/{job.pk}/outputs/?path=logs").content.decode()
        assert section(body, "outputs-path") == "/workspace/outputs/logs"
        assert "train.log" in body and "Up one folder" in body
        response = client.get(f"/jobs/{job.pk}/outputs/?path=logs/train.log")
        assert response.status_code == 200
        assert b"".join(response.streaming_content) == b"epoch 1\n"
        assert "attachment" in response["Content-Disposition"]

    @pytest.mark.parametrize("path", ["..", "logs/../../..", "nothing-here"])
    def test_nothing_outside_the_folder(self, client, alice, job, path):
        client.force_login(alice)
        response = client.get(f"/jobs/{job.pk}/outputs/", {"path": path})
        if path == "nothing-here":  # inside, but not (yet) written
            assert 'data-testid="outputs-empty"' in response.content.decode()
        else:
            assert response.status_code == 404

    def test_a_link_out_of_the_folder_is_not_followed(self, client, alice, job):
        (storage_source(job.output_path) / "escape").symlink_to(settings.STORAGE_ROOT)
        client.force_login(alice)
        assert client.get(f"/jobs/{job.pk}/outputs/?path=escape").status_code == 404

    def test_a_folder_not_written_yet(self, client, alice, vision):
        job = JobFactory(owner=alice, project=vision, status=Status.QUEUED)
        client.force_login(alice)
        body = client.get(f"/jobs/{job.pk}/outputs/").content.decode()
        assert "Nothing written yet" in section(body, "outputs-empty")


# --- logs and events of a job that really runs ------------------------------------------------

PRINTS_PATHS = """
import os, shutil
print("cwd", os.getcwd())
print("home", os.environ["HOME"], "tmp", os.environ["TMPDIR"])
print("saved", os.path.abspath("outputs/ckpt-1.pt"))
print("really", os.path.realpath("outputs"))
print("output dir", os.environ.get("CONSOLE_OUTPUT_DIR", "-"))
print("python", shutil.which("python3"))
"""


@pytest.mark.usefixtures("local_runs")
def test_the_log_names_the_jobs_paths_not_the_machines(
    client, alice, vision, run_cluster, torch_runtime
):
    job = make_job(alice, vision, run_cluster["cpu"],
                   command="python3 /workspace/algorithm/paths.py")  # fmt: skip
    program(job, "paths.py", PRINTS_PATHS)
    # The image's Python: a runtime folder of this machine, first on the job's PATH.
    Image.objects.filter(pk=job.image_id).update(local_runtime=str(torch_runtime))
    [attempt] = admit_and_launch()
    wait_for_phase(job, Phase.SUCCEEDED)
    text = log_of(attempt)
    assert "cwd /workspace\n" in text
    assert "home /home tmp /tmp\n" in text
    assert "saved /workspace/outputs/ckpt-1.pt\n" in text
    assert "python /usr/local/bin/python3\n" in text  # the image's runtime, as in a container
    assert "really /workspace/outputs\n" in text
    client.force_login(alice)
    for address in (f"/jobs/{job.pk}/", f"/jobs/{job.pk}/logs/", f"/jobs/{job.pk}/logs/more/"):
        body = client.get(address).content.decode()
        assert "saved /workspace/outputs/ckpt-1.pt" in body, address
        assert str(settings.RUNS_DIR) not in body and str(settings.STORAGE_ROOT) not in body
    download = client.get(f"/jobs/{job.pk}/logs/download/")
    whole = b"".join(download.streaming_content).decode()
    assert "really /workspace/outputs" in whole and str(settings.RUNS_DIR) not in whole


@pytest.mark.usefixtures("local_runs")
def test_a_missing_program_is_named_as_the_user_typed_it(client, alice, vision, run_cluster):
    job = make_job(alice, vision, run_cluster["cpu"], command="/workspace/algorithm/nope.sh")
    [attempt] = admit_and_launch()
    job = wait_for_phase(job, Phase.ERROR)
    said = [*JobEvent.objects.filter(job=job).values_list("message", flat=True), job.reason]
    assert any("command not found: /workspace/algorithm/nope.sh" in text for text in said)
    assert not any(str(settings.RUNS_DIR) in text for text in said)
    assert "console: command not found: /workspace/algorithm/nope.sh" in log_of(attempt)
