"""Python runtimes for the jobs the local backend runs, and which image uses which.

The local backend runs a job's replicas as processes of this machine, so "the image" cannot
bring its Python and PyTorch along as a container would. An image's ``local_runtime`` names a
folder holding a Python environment instead; :func:`path_entries` gives its ``bin/`` to put
first on the replica's ``PATH``, so that ``python train.py`` finds that Python.

:func:`ensure_runtime` makes the one runtime the demo needs: a venv under
``RUNTIMES_DIR/torch-cpu/`` (default ``var/runtimes``) with the CPU build of PyTorch.
PyTorch has no CPU wheel for the console's Python (3.12+), so the venv uses a Python 3.11,
found on ``PATH`` or through pyenv as the Makefile finds the console's own (preferring one
the job user can run). It installs only a CPU wheel that pip's
``find-links`` already hold on this machine: without one, pip would fetch the default build
from an index and, with it, gigabytes of CUDA libraries.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from django.utils.translation import gettext as _

from resources.backends import local_runner_host as host

RUNTIME_NAME = "torch-cpu"
PYTHON_VERSION = (3, 11)
TORCH_REQUIREMENT = "torch==2.13.0"
# Written last, once the venv imports torch: a folder without it is a half-made one.
STAMP = ".console-runtime"
# The demo's PyTorch image (resources.demo.IMAGES) gets the runtime when it has none.
DEMO_IMAGE = "pytorch-2"

CREATED = "created"
ALREADY_THERE = "already there"
NO_PYTHON = "no Python 3.11 found (PATH, then pyenv)"
NO_WHEEL = "no local PyTorch CPU wheel (pip find-links)"

INSTALL_TIMEOUT = 1800


@dataclass(frozen=True)
class Result:
    """``status`` is CREATED, ALREADY_THERE or a one-line reason why there is no runtime."""

    folder: Path
    status: str

    @property
    def ready(self) -> bool:
        return self.status in (CREATED, ALREADY_THERE)


def default_folder() -> Path:
    from django.conf import settings

    return Path(settings.RUNTIMES_DIR) / RUNTIME_NAME


def is_ready(folder: Path) -> bool:
    return (folder / STAMP).is_file() and (folder / "bin" / "python").exists()


# --- Finding a Python 3.11 -------------------------------------------------------------


def _real_python(candidate: str, env: Mapping[str, str]) -> str | None:
    """The interpreter behind ``candidate`` if it is Python 3.11, else None. A pyenv shim
    of an inactive version exits non-zero, so asking is the only honest check."""
    wanted = ".".join(map(str, PYTHON_VERSION))
    code = (
        "import sys; v = '%d.%d' % sys.version_info[:2]; "
        f"print(sys.executable) if v == {wanted!r} else sys.exit(1)"
    )
    try:
        done = subprocess.run(
            [candidate, "-c", code], env=dict(env), capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[-1] if done.returncode == 0 and lines else None


def _pyenv_candidates(env: Mapping[str, str]) -> list[str]:
    """``<pyenv root>/versions/3.11.x/bin/python3``, newest last, as the Makefile's
    FIND_PYTHON lists them (the shims may be inactive)."""
    pyenv = shutil.which("pyenv", path=env.get("PATH", ""))
    if not pyenv:
        return []
    try:
        root = subprocess.run(
            [pyenv, "root"], env=dict(env), capture_output=True, text=True, timeout=30
        ).stdout.strip()
        versions = subprocess.run(
            [pyenv, "versions", "--bare"], env=dict(env), capture_output=True, text=True, timeout=30
        ).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return []
    major, minor = PYTHON_VERSION
    pattern = re.compile(rf"{major}\.{minor}(\.\d+)?")
    matching = [v for v in versions if pattern.fullmatch(v)]
    matching.sort(key=lambda v: [int(part) for part in v.split(".")])
    return [str(Path(root, "versions", v, "bin", "python3")) for v in matching]


def find_python(env: Mapping[str, str] | None = None) -> str | None:
    """A Python 3.11 interpreter: each ``python3.11`` on ``PATH``, then pyenv's 3.11s,
    newest first; one the job user can reach wins. Jobs may run as an unprivileged user, and
    a venv only links to its base interpreter, so that interpreter (and its standard library
    beside it) must be reachable, which a pyenv under a private home folder is not."""
    env = os.environ if env is None else env
    candidates = []
    for folder in env.get("PATH", "").split(os.pathsep):
        on_path = shutil.which("python3.11", path=folder) if folder else None
        if on_path and on_path not in candidates:
            candidates.append(on_path)
    candidates += reversed(_pyenv_candidates(env))
    found = [real for real in (_real_python(c, env) for c in candidates) if real]
    user = host.job_user()
    usable = [r for r in found if host.unreachable_ancestor(Path(r).resolve(), user) is None]
    return (usable or found or [None])[0]


# --- The local wheel --------------------------------------------------------------------


def local_cpu_wheel(python: str, env: Mapping[str, str] | None = None) -> str | None:
    """The exact torch version (``2.13.0+cpu``) pip would take from its ``find-links``
    without any index, or None. A dry run: it reads the configured links, copies nothing.

    The version must carry the ``+cpu`` label: the plain build is the CUDA one, whose
    dependencies are the gigabytes this check exists to avoid."""
    env = dict(os.environ if env is None else env)
    with tempfile.TemporaryDirectory(prefix="console-runtime-") as tmp:
        report = Path(tmp) / "report.json"
        argv = [
            python, "-m", "pip", "install", "--dry-run", "--quiet", "--no-index", "--no-deps",
            "--ignore-installed", "--disable-pip-version-check", "--report", str(report),
            TORCH_REQUIREMENT,
        ]  # fmt: skip
        try:
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode != 0 or not report.is_file():
            return None
        try:
            found = json.loads(report.read_text())["install"][0]
            version = found["metadata"]["version"]
            url = found["download_info"]["url"]
        except (ValueError, KeyError, IndexError):
            return None
    # find-links may name a web page too: only a file already here counts.
    return version if url.startswith("file:") and version.endswith("+cpu") else None


# --- Making the runtime -----------------------------------------------------------------


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _run(argv: list[str], env: Mapping[str, str]) -> str | None:
    """None on success, else a one-line reason."""
    try:
        done = subprocess.run(
            argv, env=dict(env), capture_output=True, text=True, timeout=INSTALL_TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    return None if done.returncode == 0 else _last_line(done.stderr or done.stdout)


def _build(folder: Path, python: str, version: str, env: Mapping[str, str]) -> str | None:
    """Make the venv and install torch into it; None on success, else a reason."""
    if folder.exists():  # an earlier attempt stopped halfway
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    problem = _run([python, "-m", "venv", str(folder)], env)
    if problem:
        return f"python -m venv failed: {problem}"
    pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    pip += ["--disable-pip-version-check"]
    # The exact local version, so pip cannot prefer another build from an index. NumPy is
    # optional for torch, but importing torch without it warns in every job's log.
    if _run([*pip, f"torch=={version}", "numpy"], env) is not None:
        problem = _run([*pip, f"torch=={version}"], env)
        if problem:
            return f"pip install torch failed: {problem}"
    check = (
        "import torch, torch.distributed as d; assert d.is_available(); print(torch.__version__)"
    )
    problem = _run([str(folder / "bin" / "python"), "-c", check], env)
    if problem:
        return f"torch does not import: {problem}"
    (folder / STAMP).write_text(f"torch {version}\n", encoding="utf-8")
    return None


def ensure_runtime(
    folder: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    log: Callable[[str], object] = lambda line: None,
) -> Result:
    """Make the PyTorch CPU runtime in ``folder`` (default ``RUNTIMES_DIR/torch-cpu``)
    unless it is there. Instant when it is; a few minutes the first time. Never raises for
    a machine that cannot have it: the result says why."""
    folder = Path(folder or default_folder())
    env = os.environ if env is None else env
    if is_ready(folder):
        return Result(folder, ALREADY_THERE)
    python = find_python(env)
    if python is None:
        return Result(folder, NO_PYTHON)
    version = local_cpu_wheel(python, env)
    if version is None:
        return Result(folder, NO_WHEEL)
    folder.parent.mkdir(parents=True, exist_ok=True)
    # `make run` and a test run may both get here: one builds, the other waits and finds it.
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_ready(folder):
            return Result(folder, ALREADY_THERE)
        log(f"Creating the PyTorch runtime in {folder} with {python} (first time only)…")
        problem = _build(folder, python, version, env)
    if problem:
        return Result(folder, problem)
    return Result(folder, CREATED)


# --- Images -----------------------------------------------------------------------------


def folder_problem(value: str) -> str | None:
    """Why ``value`` cannot be an image's local runtime, or None (blank is fine)."""
    if not value:
        return None
    folder = Path(value)
    if not folder.is_absolute():
        return _("Give an absolute path: jobs run in their own working folders.")
    if not folder.is_dir():
        return _("This folder does not exist on the console's machine.")
    if not (folder / "bin" / "python").exists():
        return _("This folder holds no Python environment: bin/python is missing.")
    return None


def path_entries(image) -> list[str]:
    """The folders to put first on ``PATH`` for a job the local backend runs with
    ``image`` (an Image or None): its runtime's ``bin/``, or nothing."""
    runtime = getattr(image, "local_runtime", "") if image is not None else ""
    return [str(Path(runtime) / "bin")] if runtime else []


def attach_to_demo_image(folder: Path | None = None) -> int:
    """Give the demo's PyTorch image the runtime if it has none and the runtime is ready.
    Returns how many images changed (0 or 1); an admin's own choice is kept."""
    from resources.models import Image

    folder = Path(folder or default_folder())
    if not is_ready(folder):
        return 0
    return Image.objects.filter(name=DEMO_IMAGE, local_runtime="").update(local_runtime=str(folder))
