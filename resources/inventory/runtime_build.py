"""How a runtime (resources.inventory.runtimes) is made: the Python 3.11 it is based on, the local
PyTorch CPU wheel, and the venv with its packages.

PyTorch has no CPU wheel for the console's Python (3.12+), so every runtime uses a Python
3.11, found on ``PATH`` or through pyenv as the Makefile finds the console's own (preferring
one the job user can run). PyTorch itself comes only from a CPU wheel that pip's
``find-links`` already hold on this machine: without one, pip would fetch the default build
from an index and, with it, gigabytes of CUDA libraries. Everything else comes from the
configured index.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from resources.backends.local import users

PYTHON_VERSION = (3, 11)
TORCH_REQUIREMENT = "torch==2.13.0"
INSTALL_TIMEOUT = 1800
# Written last, once the venv passed its check: a folder without it is a half-made one.
STAMP = ".console-runtime"


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
    user = users.job_user()
    usable = [r for r in found if users.unreachable_ancestor(Path(r).resolve(), user) is None]
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


# --- Making the venv --------------------------------------------------------------------


def _last_line(text: str) -> str:
    # pip warns about every index location it skips: the error is the last other line.
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("WARNING:")] or lines
    return lines[-1] if lines else "no output"


def run(argv: list[str], env: Mapping[str, str]) -> str | None:
    """None on success, else a one-line reason."""
    try:
        done = subprocess.run(
            argv, env=dict(env), capture_output=True, text=True, timeout=INSTALL_TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    return None if done.returncode == 0 else _last_line(done.stderr or done.stdout)


def add(folder: Path, packages, check: str, env: Mapping[str, str]) -> str | None:
    """pip install ``packages`` into the made venv in ``folder`` and run ``check`` there;
    None on success, else a one-line reason."""
    own_python = str(folder / "bin" / "python")
    pip = [own_python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    problem = run([*pip, *packages], env)
    if problem:
        return f"pip install {' '.join(packages)} failed: {problem}"
    problem = run([own_python, "-c", check], env)
    return f"the check after installing failed: {problem}" if problem else None


def build(
    folder: Path,
    python: str,
    steps: list[tuple[str, list[str], dict[str, str]]],
    check: str,
    env: Mapping[str, str],
    stamp: str,
) -> str | None:
    """Make the venv in ``folder`` and run pip for each step (what, arguments, extra
    variables); None on success (the stamp written last), else a one-line reason."""
    if folder.exists():  # an earlier attempt stopped halfway
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    problem = run([python, "-m", "venv", str(folder)], env)
    if problem:
        return f"python -m venv failed: {problem}"
    own_python = str(folder / "bin" / "python")
    pip = [own_python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    for what, arguments, extra in steps:
        problem = run([*pip, *arguments], {**env, **extra})
        if problem:
            return f"pip install {what} failed: {problem}"
    problem = run([own_python, "-c", check], env)
    if problem:
        return f"the check after installing failed: {problem}"
    (folder / STAMP).write_text(stamp, encoding="utf-8")
    return None
