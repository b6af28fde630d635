"""console-cli end to end (SPEC I3), as a separate process against the live server: log in
with a token, submit a 2-node PyTorch DDP job from job.yaml, follow its log to the end,
`wait` exits 0; a refused job exits non-zero with the form's words; `ls --json` and
`predict` answer; the job exported as job.yaml submits the same job again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from console import tokens
from jobs.execution import runs
from jobs.models import Job
from resources import samples
from resources.catalog.mounts import storage_source
from resources.models import Image
from tests.helpers import every
from tests.jobs.execution_helpers import admit_and_launch
from tests.resources.catalog_factories import AlgorithmFactory
from tests.resources.factories import ImageFactory

pytestmark = pytest.mark.usefixtures("local_runs")

CLI = Path(__file__).resolve().parents[2] / "cli"


def cli(home: Path, url: str, *args: str, token: str | None = None, timeout: float = 240):
    env = {
        **os.environ, "PYTHONPATH": str(CLI), "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"), "LANG": "C.UTF-8",
    }  # fmt: skip
    env.pop("CONSOLE_URL", None)
    env.pop("CONSOLE_TOKEN", None)
    return subprocess.run(
        [sys.executable, "-m", "console_cli", *args], env=env, capture_output=True, text=True,
        timeout=timeout, input=f"{token}\n" if token else None,
    )  # fmt: skip


@pytest.fixture
def beat():
    """Admission and the runs' sync, as the worker and beat do, while the test lasts."""

    def step():
        admit_and_launch()
        runs.sync()

    with every(0.5, step):
        yield


def test_a_ddp_job_from_job_yaml_is_followed_and_waited_for(
    transactional_db, live_server, tmp_path, alice, vision, run_cluster, runtime_folder, beat
):
    folder = runtime_folder("torch-cpu")
    ImageFactory(name="pytorch-2", local_runtime=str(folder), board_kinds=["GPU", "CPU"])
    algorithm = AlgorithmFactory(name="ddp", owner=alice, project=vision)
    samples.copy_program(samples.DDP_SAMPLE, storage_source(algorithm.path))
    _row, token = tokens.issue(alice, "cli", "write")

    logged = cli(tmp_path, live_server.url, "login", live_server.url, token=token)
    assert logged.returncode == 0, logged.stderr
    assert "Logged in as alice (write)" in logged.stdout
    config = tmp_path / ".config" / "console-cli" / "config.json"
    assert oct(config.stat().st_mode & 0o777) == "0o600"

    job_yaml = tmp_path / "job.yaml"
    job_yaml.write_text(yaml.safe_dump({
        "project": "vision", "name": "ddp-cli", "algorithm": "ddp", "image": "pytorch-2",
        "mode": "pytorch", "specs": ["gpu-1"], "node_count": 2, "graceful_shutdown_seconds": 5,
        "command": "python /workspace/algorithm/train.py --steps 6 --batch-size 16",
    }))  # fmt: skip
    predicted = cli(tmp_path, live_server.url, "--json", "predict", str(job_yaml))
    assert predicted.returncode == 0, predicted.stderr
    assert json.loads(predicted.stdout)["spec"] == "gpu-1"

    submitted = cli(tmp_path, live_server.url, "submit", str(job_yaml))
    assert submitted.returncode == 0, submitted.stderr
    job_id = int(submitted.stdout.split()[0])
    assert (
        Job.objects.get(pk=job_id)
        .events.first()
        .message.startswith("Submitted by alice through the API")
    )
    followed = cli(tmp_path, live_server.url, "logs", "-f", str(job_id))
    assert followed.returncode == 0, followed.stderr
    assert "training: 2 " in followed.stdout, followed.stdout
    waited = cli(tmp_path, live_server.url, "wait", str(job_id), "--interval", "0.5")
    assert waited.returncode == 0, (waited.stdout, waited.stderr, Job.objects.get(pk=job_id).reason)
    assert "Succeeded" in waited.stdout

    listed = cli(tmp_path, live_server.url, "--json", "ls")
    assert [j["name"] for j in json.loads(listed.stdout)] == ["ddp-cli"]

    # The job as job.yaml submits the same job again (under another name).
    printed = cli(tmp_path, live_server.url, "export", str(job_id))
    assert printed.returncode == 0 and printed.stdout == _yaml(live_server.url, token, job_id)
    exported = yaml.safe_load(printed.stdout)
    assert {k: exported[k] for k in ("algorithm", "image", "mode", "specs", "node_count")} == {
        "algorithm": "ddp", "image": "pytorch-2", "mode": "pytorch", "specs": ["gpu-1"],
        "node_count": 2,
    }  # fmt: skip
    exported["name"] = "ddp-cli-again"
    job_yaml.write_text(yaml.safe_dump(exported))
    again = cli(tmp_path, live_server.url, "submit", str(job_yaml))
    assert again.returncode == 0, again.stderr
    assert Job.objects.get(name="ddp-cli-again").command == Job.objects.get(pk=job_id).command


def _yaml(url: str, token: str, job_id: int) -> str:
    import httpx

    return httpx.get(f"{url}/api/v1/jobs/{job_id}/yaml",
                     headers={"Authorization": f"Bearer {token}"}).text  # fmt: skip


def test_a_refused_job_exits_non_zero_with_the_form_s_words(
    transactional_db, live_server, tmp_path, alice, vision, run_cluster
):
    Image.objects.all().delete()
    ImageFactory(name="pytorch-2")
    _row, token = tokens.issue(alice, "cli", "write")
    assert cli(tmp_path, live_server.url, "login", live_server.url, token=token).returncode == 0
    job_yaml = tmp_path / "job.yaml"
    job_yaml.write_text("name: Bad_Name\nimage: pytorch-2\nspecs: [gpu-1]\nnode_count: 3\n")
    refused = cli(tmp_path, live_server.url, "submit", str(job_yaml))
    assert refused.returncode == 1
    assert "The job was not created" in refused.stderr
    assert "name: Use lowercase letters" in refused.stderr or "lowercase letters" in refused.stderr
    assert "node_count: A single-node job runs on one node" in refused.stderr, refused.stderr
    assert not Job.objects.exists()
    # Not logged in, a bad token, an unreachable console: a message, never a traceback.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    nobody = cli(fresh, live_server.url, "ls")
    assert nobody.returncode != 0 and "Not logged in" in nobody.stderr
    bad = cli(fresh, live_server.url, "login", live_server.url, token="tc_nope_nope")
    assert bad.returncode == 1 and "Unauthorized" in bad.stderr
    gone = cli(fresh, "http://127.0.0.1:9", "login", "http://127.0.0.1:9", token=token)
    assert gone.returncode == 3 and "did not answer" in gone.stderr
    assert "Traceback" not in refused.stderr + nobody.stderr + bad.stderr + gone.stderr
