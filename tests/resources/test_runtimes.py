"""Finding a Python 3.11 (PATH, then pyenv) and refusing to install PyTorch from anywhere but
a local CPU wheel. The finder runs real (fake) programs; pip runs for real, pointed at an
empty find-links folder."""

from __future__ import annotations

import os
import stat
import time

import pytest

from resources.inventory import runtimes


def program(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def a_python(path):
    """A stand-in that answers the finder's question "are you 3.11?" with yes."""
    return program(path, f"echo {path}")


def not_that_python(path):
    return program(path, "exit 1")  # e.g. a pyenv shim of an inactive version


def fake_pyenv(bin_dir, root, versions):
    answers = "\n".join(versions)
    body = f'case "$1" in root) echo {root};; versions) printf "{answers}\\n";; esac'
    return program(bin_dir / "pyenv", body)


def test_python311_on_path_comes_first(tmp_path):
    python = a_python(tmp_path / "bin" / "python3.11")
    fake_pyenv(tmp_path / "bin", tmp_path / "pyenv", ["3.11.9"])
    a_python(tmp_path / "pyenv" / "versions" / "3.11.9" / "bin" / "python3")
    assert runtimes.find_python({"PATH": str(tmp_path / "bin")}) == str(python)


def test_else_pyenvs_newest_311(tmp_path):
    not_that_python(tmp_path / "bin" / "python3.11")
    root = tmp_path / "pyenv"
    fake_pyenv(tmp_path / "bin", root, ["3.10.13", "3.11.2", "3.11.10", "3.12.1", "3.11-dev"])
    for version in ("3.10.13", "3.11.2", "3.11.10", "3.12.1"):
        a_python(root / "versions" / version / "bin" / "python3")
    found = runtimes.find_python({"PATH": str(tmp_path / "bin")})
    assert found == str(root / "versions" / "3.11.10" / "bin" / "python3")


@pytest.mark.skipif(os.geteuid() != 0, reason="jobs run as another user only under root")
def test_one_every_user_can_run_wins_over_a_private_one(tmp_path):
    """Jobs run as an unprivileged user: a venv linking to a 3.11 under a private folder
    (pyenv in root's home) would not start for them."""
    private = a_python(tmp_path / "private" / "bin" / "python3.11")
    (tmp_path / "private").chmod(0o700)
    shared = a_python(tmp_path / "shared" / "bin" / "python3.11")
    shared.chmod(0o755)
    for folder in (*reversed(shared.parents), shared.parent):
        if folder.stat().st_uid == os.geteuid():
            folder.chmod(folder.stat().st_mode | stat.S_IXOTH)
    path = f"{private.parent}:{shared.parent}"
    assert runtimes.find_python({"PATH": path}) == str(shared)
    shared.parent.chmod(0o700)  # nobody else can run either: the first still serves its owner
    assert runtimes.find_python({"PATH": path}) == str(private)


def test_no_python311_anywhere(tmp_path):
    not_that_python(tmp_path / "bin" / "python3.11")
    fake_pyenv(tmp_path / "bin", tmp_path / "pyenv", ["3.12.1"])
    a_python(tmp_path / "pyenv" / "versions" / "3.12.1" / "bin" / "python3")
    assert runtimes.find_python({"PATH": str(tmp_path / "bin")}) is None
    result = runtimes.ensure_runtime(tmp_path / "rt", env={"PATH": str(tmp_path / "bin")})
    assert (result.ready, result.status) == (False, runtimes.NO_PYTHON)
    assert not (tmp_path / "rt").exists()


def test_without_a_local_wheel_nothing_is_installed(tmp_path):
    if runtimes.find_python() is None:
        pytest.skip("no Python 3.11 on this machine (PATH, then pyenv)")
    empty = tmp_path / "wheels"
    empty.mkdir()
    env = {**os.environ, "PIP_FIND_LINKS": str(empty), "PIP_NO_INDEX": "1"}
    assert runtimes.local_cpu_wheel(runtimes.find_python(), env) is None
    result = runtimes.ensure_runtime(tmp_path / "rt", env=env)
    assert (result.ready, result.status) == (False, runtimes.NO_WHEEL)
    assert result.status == "no local PyTorch CPU wheel (pip find-links)"
    assert not (tmp_path / "rt").exists()


def test_a_made_runtime_is_found_at_once(tmp_path):
    folder = tmp_path / "rt"
    a_python(folder / "bin" / "python")
    # Not stamped: a half-made one, which would be made again (here: no Python to do it).
    assert runtimes.ensure_runtime(folder, env={"PATH": ""}).status == runtimes.NO_PYTHON
    (folder / runtimes.STAMP).write_text("torch-cpu 0123456789ab torch 2.13.0+cpu\n")
    # Made from an older recipe (e.g. without the tools): made again.
    assert runtimes.ensure_runtime(folder, env={"PATH": ""}).status == runtimes.NO_PYTHON
    (folder / runtimes.STAMP).write_text(f"{runtimes.stamp_line(runtimes.TORCH)} torch 2.13\n")
    began = time.monotonic()
    result = runtimes.ensure_runtime(folder, env={"PATH": ""})
    assert (result.ready, result.status) == (True, runtimes.ALREADY_THERE)
    assert time.monotonic() - began < 0.5


def test_make_runtime_says_why_in_one_line_and_goes_on(tmp_path, settings, monkeypatch):
    from io import StringIO

    from django.core.management import call_command

    settings.RUNTIMES_DIR = tmp_path / "runtimes"
    monkeypatch.setenv("PATH", "")  # no Python 3.11 anywhere: no runtime can be made
    out = StringIO()
    call_command("make_runtime", stdout=out)
    lines = out.getvalue().splitlines()
    assert [line.split(" runtime not created: ")[0] for line in lines] == [
        "PyTorch", "TensorFlow", "DeepSpeed",
    ]  # fmt: skip
    assert all(runtimes.NO_PYTHON in line for line in lines)
    assert "jobs with tensorflow-2 cannot run on this machine" in lines[1]
    assert not (tmp_path / "runtimes").exists()


class TestNothingLeftBehindBreaksTheNextRun:
    """A test run's files live in the checkout or pytest's own temporary folders: what a
    run in another (since deleted) checkout left in the shared temporary folder cannot break
    this one."""

    def test_a_stand_in_runtime_left_dangling_is_linked_again(self, tmp_path):
        import sys

        from tests.helpers import stand_in_runtime

        python = tmp_path / "stand-in" / "bin" / "python"
        python.parent.mkdir(parents=True)
        python.symlink_to(tmp_path / "deleted-checkout" / ".venv" / "bin" / "python")
        assert python.is_symlink() and not python.exists()  # as after that clone was deleted
        stand_in_runtime(tmp_path / "stand-in")
        assert python.exists() and os.readlink(python) == sys.executable

    def test_the_images_stand_in_runtime_is_in_the_checkout(self, settings):
        from pathlib import Path

        from tests.resources.factories import ImageFactory

        runtime = Path(ImageFactory.build().local_runtime)
        assert runtime.is_relative_to(settings.BASE_DIR / "var")
        assert (runtime / "bin" / "python").exists()

    def test_a_fake_cluster_over_tls_leaves_no_folder_behind(self):
        import tempfile
        from pathlib import Path

        from tests.resources.cluster_helpers import with_tls
        from tests.resources.k8s_fake.server import FakeKubernetes

        def leftovers():
            return set(Path(tempfile.gettempdir()).glob("fake-k8s-tls-*"))

        before = leftovers()
        with with_tls(FakeKubernetes([], auto=False)) as fake:
            assert fake.url.startswith("https://")
        assert leftovers() == before
