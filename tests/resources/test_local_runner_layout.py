"""The local runner's pure rules: in-container paths and host names rewritten for this
machine, loopback addresses, MPI hostfiles, board variables, log windows. No processes."""

from __future__ import annotations

import pytest

from resources.backends.base import ReplicaSpec, Workload
from resources.backends.local.layout import (
    boards_env,
    host_map,
    local_hostfile,
    localize,
    real_path,
    replica_address,
    rewritten_paths,
)
from resources.backends.local.logs import without_partial_character
from resources.backends.local.prepare import check_workload

DIR = "/runs/job-1-1/job-worker-1"
PATHS = rewritten_paths(["/etc/mpi/hostfile", "/job/hostfile"], ["/workspace/outputs", "/data"])
HOSTS = host_map(
    [("job-worker-0", ()), ("job-worker-1", ("job-worker-1.svc",)), ("job-worker-10", ())],
    ["127.9.9.1", "127.9.9.2", "127.9.9.11"],
    own="127.9.9.2",
)


def rewrite(text: str) -> str:
    return localize(text, replica_dir=DIR, paths=PATHS, hosts=HOSTS)


def test_rewritten_paths_are_workspace_files_and_outer_mounts():
    assert PATHS == ("/data", "/etc/mpi/hostfile", "/job/hostfile", "/workspace")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/workspace", f"{DIR}/workspace"),
        ("/workspace/algorithm/train.py", f"{DIR}/workspace/algorithm/train.py"),
        ("--out=/workspace/outputs", f"--out={DIR}/workspace/outputs"),
        ("cd /workspace && python a.py", f"cd {DIR}/workspace && python a.py"),
        ("a:/workspace/bin:/usr/bin", f"a:{DIR}/workspace/bin:/usr/bin"),
        ('{"dir": "/workspace/outputs"}', f'{{"dir": "{DIR}/workspace/outputs"}}'),
        ("/etc/mpi/hostfile", f"{DIR}/etc/mpi/hostfile"),
        ("/data/x", f"{DIR}/data/x"),
        # Not ours: a longer name, a path inside another, the machine's own files.
        ("/workspaces/x", "/workspaces/x"),
        ("/home/me/workspace/x", "/home/me/workspace/x"),
        ("/etc/mpi/hostfile.bak", "/etc/mpi/hostfile.bak"),
        ("/etc/passwd /usr/bin/python3", "/etc/passwd /usr/bin/python3"),
    ],
)
def test_paths(text, expected):
    assert rewrite(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("job-worker-0", "127.9.9.1"),
        ("job-worker-0 slots=2\njob-worker-1 slots=2\n", "127.9.9.1 slots=2\n127.9.9.2 slots=2\n"),
        ('{"worker": ["job-worker-0:5000", "job-worker-10:5000"]}',
         '{"worker": ["127.9.9.1:5000", "127.9.9.11:5000"]}'),
        ("--master_addr=job-worker-0", "--master_addr=127.9.9.1"),
        ("http://job-worker-1:80/x", "http://127.9.9.2:80/x"),
        ("job-worker-1.svc:2222", "127.9.9.2:2222"),  # an alias
        ("localhost", "127.9.9.2"),  # this replica: rank 0's MASTER_ADDR
        # Not host names: longer names, other domains, parts of words.
        ("job-worker-100", "job-worker-100"),
        ("job-worker-0.other", "job-worker-0.other"),
        ("my-job-worker-0", "my-job-worker-0"),
        ("job-worker-0x", "job-worker-0x"),
    ],
)  # fmt: skip
def test_hosts(text, expected):
    assert rewrite(text) == expected


def test_one_pass_leaves_replacements_alone():
    # The replica's folder contains a host name; it must not be rewritten again.
    folder = "/runs/job-1-1/job-worker-0"
    text = "/workspace/x job-worker-0"
    result = localize(text, replica_dir=folder, paths=("/workspace",), hosts=HOSTS)
    assert result == f"{folder}/workspace/x 127.9.9.1"


@pytest.mark.parametrize("path", ["relative/x", "/", "/workspace/../etc", ""])
def test_real_path_refuses_what_would_leave_the_folder(path):
    with pytest.raises(ValueError):
        real_path(path, DIR)


def test_replica_addresses_are_one_block_per_workload():
    assert replica_address((12, 34), 0) == "127.12.34.1"
    assert replica_address((12, 34), 253) == "127.12.34.254"
    for bad in [((0, 1), 0), ((1, 256), 0), ((1, 1), 254)]:
        with pytest.raises(ValueError):
            replica_address(*bad)


def test_mpi_hostfiles_become_one_local_line():
    names = {"job-worker-0", "job-worker-1"}
    openmpi = "job-worker-0 slots=4\njob-worker-1 slots=4\n"
    assert local_hostfile(openmpi, names) == "localhost slots=8\n"
    assert local_hostfile("job-worker-0:2\n\njob-worker-1:2\n", names) == "localhost:4\n"
    assert local_hostfile("# comment\njob-worker-0 slots=1\n", names) == "localhost slots=1\n"
    # Not a hostfile of this workload: left to the ordinary rewriting.
    assert local_hostfile("other-host slots=4\n", names) is None
    assert local_hostfile('{"cluster": {}}', names) is None
    assert local_hostfile("", names) is None


def test_boards_env():
    assert boards_env((1, 3)) == {"CUDA_VISIBLE_DEVICES": "1,3", "CONSOLE_VISIBLE_BOARDS": "1,3"}
    # A CPU replica sees no board at all, as a container without devices.
    assert boards_env(()) == {"CUDA_VISIBLE_DEVICES": "", "CONSOLE_VISIBLE_BOARDS": ""}


@pytest.mark.parametrize(
    ("data", "kept"),
    [
        (b"abc", b"abc"),
        ("d\u00e9".encode(), "d\u00e9".encode()),
        ("d\u00e9".encode()[:-1], b"d"),
        ("\u4e2d".encode()[:2], b""),
        ("x\U0001f600".encode()[:-1], b"x"),
        (b"\x80\x80\x80\x80", b"\x80\x80\x80\x80"),  # not UTF-8: passed on as it is
    ],
)
def test_log_windows_never_end_inside_a_character(data, kept):
    assert without_partial_character(data) == kept


def spec(name="job-worker-0", **fields) -> ReplicaSpec:
    fields.setdefault("argv", ("true",))
    return ReplicaSpec(name=name, role="worker", index=0, **fields)


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        (Workload(id="../x", replicas=(spec(),)), "folder names"),
        (Workload(id="w", replicas=()), "1 to 254 replicas"),
        (Workload(id="w", replicas=(spec(), spec())), "unique"),
        (Workload(id="w", replicas=(spec(awaited=False),)), "could never succeed"),
        (Workload(id="w", replicas=(spec(name="Bad_Name"),)), "DNS label"),
        (Workload(id="w", replicas=(spec(argv=()),)), "has no argv"),
        (Workload(id="w", replicas=(spec(mounts=(("rel", "/workspace/x", True),)),)), "absolute"),
        (Workload(id="w", replicas=(spec(mounts=(("/s", "/workspace", True),)),)), "itself"),
        (
            Workload(
                id="w",
                replicas=(
                    spec(mounts=(("/s", "/workspace/outputs", False),),
                         files={"/workspace/outputs/x": ""}),
                ),
            ),
            "into a mount",
        ),
        (Workload(id="w", replicas=(spec(),), graceful_seconds=-1), "graceful_seconds"),
    ],
)  # fmt: skip
def test_check_workload_refuses(workload, message):
    with pytest.raises(ValueError, match=message):
        check_workload(workload)
