"""Jobs of different users are isolated from each other on the local backend (SPEC E1, P).

A hostile job of bob's — a real process, launched the way every job is — tries to read the
log and workspace of alice's running job, write and read her outputs, read a dataset she has
not shared, read her processes' environment and signal them. Each attempt must fail; the
same program succeeds with its own files and processes, and with what is shared with it.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from console.sharing import Access
from jobs.models import Attempt, JobDataset, Phase
from resources.catalog.mounts import storage_source
from resources.inventory import identity
from tests.helpers import wait_until
from tests.jobs.execution_helpers import admit_and_launch, log_of, make_job, program, wait_for_phase
from tests.resources.catalog_factories import DatasetFactory, DatasetVersionFactory

pytestmark = [
    pytest.mark.usefixtures("local_runs"),
    pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs a console run as root"),
]

ALICE = """
import os, time
with open("outputs/checkpoint.txt", "w") as out:
    out.write("alice's weights")
print("alice trains", flush=True)
time.sleep(120)
"""

HOSTILE = """
import json, os, signal, subprocess, sys
target = json.loads(sys.argv[1])
results = {}

def attempt(name, action):
    try:
        action()
        results[name] = "allowed"
    except OSError as error:
        results[name] = type(error).__name__

def write(path, text="x"):
    with open(path, "a") as handle:
        handle.write(text)

attempt("their log", lambda: open(target["log"]).read())
attempt("their workspace", lambda: os.listdir(target["workspace"]))
attempt("their home", lambda: os.listdir(target["home"]))
attempt("their outputs: read", lambda: open(target["checkpoint"]).read())
attempt("their outputs: write", lambda: write(target["outputs"] + "/pwned.txt"))
attempt("their private dataset", lambda: open(target["private"]).read())
attempt("their environment", lambda: open(f"/proc/{target['pid']}/environ").read())
attempt("their process: SIGTERM", lambda: os.kill(target["pid"], signal.SIGTERM))
attempt("their process group: SIGKILL", lambda: os.killpg(target["pid"], signal.SIGKILL))
attempt("shared dataset: read", lambda: open(target["shared"]).read())
attempt("shared dataset: write", lambda: write(target["shared"]))
# Its own log, found from its home folder (a path in its command would be rewritten).
attempt("own log", lambda: open(os.path.dirname(os.environ["HOME"]) + "/log.txt").read())
attempt("own outputs: write", lambda: write("outputs/mine.txt", "bob's"))
attempt("own outputs: read", lambda: open("outputs/mine.txt").read())
child = subprocess.Popen(["sleep", "30"])
attempt("own process: SIGTERM", lambda: os.kill(child.pid, signal.SIGTERM))
child.wait()
print("RESULTS " + json.dumps(results, sort_keys=True), flush=True)
"""

REFUSED = [
    "their log",
    "their workspace",
    "their home",
    "their outputs: read",
    "their outputs: write",
    "their private dataset",
    "their environment",
    "their process: SIGTERM",
    "their process group: SIGKILL",
    "shared dataset: write",
]
ALLOWED = [
    "shared dataset: read",
    "own log",
    "own outputs: write",
    "own outputs: read",
    "own process: SIGTERM",
]


def a_dataset(owner, project, name: str, access: Access, text: str):
    dataset = DatasetFactory(
        owner=owner, project=project, name=name, path=f"users/{owner.username}/{name}",
        others_access=access,
    )  # fmt: skip
    version = DatasetVersionFactory(dataset=dataset, name="v1", path=f"{dataset.path}/v1")
    folder = storage_source(version.path)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.txt").write_text(text)
    return version, folder / "data.txt"


def replica_folder(job) -> tuple[Attempt, dict]:
    attempt = wait_until(lambda: Attempt.objects.filter(job=job).first())
    return attempt, attempt.replicas[0]


def test_a_hostile_job_cannot_touch_another_users_job(settings, alice, bob, vision, run_cluster):
    private, private_file = a_dataset(alice, vision, "faces", Access.NONE, "alice's faces")
    shared, shared_file = a_dataset(alice, vision, "cifar", Access.READ_ONLY, "shared cifar")
    theirs = make_job(
        alice,
        vision,
        run_cluster["cpu"],
        name="victim",
        command="python3 /workspace/algorithm/t.py",
    )
    program(theirs, "t.py", ALICE)
    JobDataset.objects.create(job=theirs, version=private, read_only=True)
    admit_and_launch()
    theirs = wait_for_phase(theirs, Phase.RUNNING, Phase.ERROR)
    assert theirs.phase == Phase.RUNNING, (
        theirs.reason,
        list(theirs.events.values_list("message", flat=True)),
    )
    attempt, replica = replica_folder(theirs)
    folder = settings.RUNS_DIR / attempt.workload_id / replica["name"]
    checkpoint = storage_source(theirs.output_path) / "checkpoint.txt"
    wait_until(checkpoint.exists)
    pid = int((folder / "pid").read_text().split()[0])

    hostile = make_job(bob, vision, run_cluster["cpu"], name="hostile", command="python3 h.py")
    JobDataset.objects.create(job=hostile, version=shared, read_only=True)
    target = {
        "log": str(folder / "log.txt"),
        "workspace": str(folder / "workspace"),
        "home": str(folder / "home"),
        "checkpoint": str(checkpoint),
        "outputs": str(checkpoint.parent),
        "private": str(private_file),
        "pid": pid,
        "shared": str(shared_file),
    }
    hostile.command = f"python3 /workspace/algorithm/h.py '{json.dumps(target)}'"
    hostile.save(update_fields=["command"])
    program(hostile, "h.py", HOSTILE)
    admit_and_launch()
    hostile = wait_for_phase(hostile, Phase.SUCCEEDED, Phase.ERROR, timeout=60)
    log = log_of(Attempt.objects.get(job=hostile))
    assert hostile.phase == Phase.SUCCEEDED, log
    results = json.loads(log.split("RESULTS ", 1)[1])
    assert {name: results[name] for name in ALLOWED} == dict.fromkeys(ALLOWED, "allowed")
    refused = {name: results[name] for name in REFUSED}
    assert "allowed" not in refused.values(), refused

    # Alice's job still runs, untouched; the shared dataset is as it was.
    theirs.refresh_from_db()
    assert theirs.phase == Phase.RUNNING
    assert os.kill(pid, 0) is None
    assert checkpoint.read_text() == "alice's weights"
    assert not (checkpoint.parent / "pwned.txt").exists()
    assert shared_file.read_text() == "shared cifar"
    # Each ran as its owner's own identity.
    assert os.stat(checkpoint).st_uid == identity.user_number(alice.pk)
    assert os.stat(storage_source(hostile.output_path) / "mine.txt").st_uid == (
        identity.user_number(bob.pk)
    )
    os.killpg(pid, signal.SIGKILL)


def test_a_read_only_mount_is_read_only_for_its_owner_too(alice, vision, run_cluster):
    version, data = a_dataset(alice, vision, "mine", Access.NONE, "original")
    data.chmod(0o666)  # writable by anyone as far as modes go: only the mount stops a write
    job = make_job(
        alice, vision, run_cluster["cpu"], name="ro", command="python3 /workspace/algorithm/w.py"
    )
    JobDataset.objects.create(job=job, version=version, read_only=True)
    program(
        job,
        "w.py",
        f"""
        try:
            open({str(data)!r}, "a").write("changed")
            print("WROTE")
        except OSError as error:
            print("REFUSED", type(error).__name__, error.errno)
        """,
    )
    admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED, Phase.ERROR, timeout=60)
    log = log_of(Attempt.objects.get(job=job))
    assert "REFUSED OSError 30" in log, log  # EROFS: a read-only mount, whoever owns the file
    assert data.read_text() == "original"
