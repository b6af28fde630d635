"""Programs shipped with the console, run as jobs: the demo algorithms, one per distributed
mode, each a ``train.py`` that runs in seconds on CPU (``resnet_train``: single node;
``ddp_sample``: PyTorch DDP; ``tf_sample``: TensorFlow multi-worker; ``deepspeed_sample``;
``mpi_sample``: gradients averaged with MPI, as Horovod does). They run with the job's Python,
not the console's, so they import nothing from the console. (The checker the tests run inside
jobs is a test's, in tests/checkers/.)"""

from __future__ import annotations

import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
DDP_SAMPLE = HERE / "ddp_sample"
TRAIN_SCRIPT = DDP_SAMPLE / "train.py"
RESNET_TRAIN = HERE / "resnet_train"
TF_SAMPLE = HERE / "tf_sample"
DEEPSPEED_SAMPLE = HERE / "deepspeed_sample"
MPI_SAMPLE = HERE / "mpi_sample"

# Files that make the folder a Python package of the console, not part of the program.
NOT_SHIPPED = {"__init__.py", "__pycache__"}


def program_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name not in NOT_SHIPPED)


def copy_program(folder: Path, target: Path) -> list[str]:
    """Copy the program's files into ``target``; a file already there is kept (its owner may
    have edited it). Returns the names copied."""
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    for source in program_files(folder):
        destination = target / source.name
        if not destination.exists():
            shutil.copyfile(source, destination)
            copied.append(source.name)
    return copied
