"""Which images use which local runtime: a demo image gets the runtime made for it once it
is ready (the admin's own choice for an image is kept)."""

from __future__ import annotations

from pathlib import Path

from resources.inventory.runtimes import TORCH, Definition, default_folder, is_ready
from resources.models import Image


def attach(definition: Definition, folder: Path | None = None) -> list[str]:
    """Give ``definition``'s demo images the runtime if they have none and it is ready.
    Returns the names of the images changed; an admin's own choice is kept."""
    folder = Path(folder or default_folder(definition))
    if not is_ready(folder, definition):
        return []
    blank = Image.objects.filter(name__in=definition.images, local_runtime="")
    names = sorted(blank.values_list("name", flat=True))
    blank.update(local_runtime=str(folder))
    return names


def attach_to_demo_image(folder: Path | None = None) -> int:
    """The PyTorch runtime to its demo images; how many changed."""
    return len(attach(TORCH, folder))
