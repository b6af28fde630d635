"""What the tool tests share: TensorBoard event files written with the runtime's own
Python, as a training script writes them."""

from __future__ import annotations

import subprocess
import textwrap
from collections.abc import Iterable
from pathlib import Path


def write_scalars(runtime: Path, folders: Path | Iterable[Path], tag: str, values: list[float]):
    """An event file of ``values`` under ``tag`` in each of ``folders``, as a training script
    writes (one Python for all of them: importing torch takes seconds)."""
    folders = [folders] if isinstance(folders, Path) else list(folders)
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    code = textwrap.dedent(
        f"""
        from torch.utils.tensorboard import SummaryWriter
        for folder in {[str(f) for f in folders]!r}:
            writer = SummaryWriter(folder)
            for step, value in enumerate({values!r}):
                writer.add_scalar({tag!r}, value, step)
            writer.close()
        """
    )
    subprocess.run([str(runtime / "bin" / "python"), "-c", code], check=True, timeout=120)
    for folder in folders:
        folder.chmod(0o755)
