"""Where catalog items appear inside a job: SPEC W's ``/workspace`` layout, in one place.

Every backend builds its volumes from these :class:`Mount` values, so the layout is the same
locally and on Kubernetes. The rules live in small pure functions (names and paths in, paths
out); the ``mount_*`` functions only read attributes of the objects they are given, and look
up a membership only to learn whether a shared item may be written to.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from django.conf import settings

from console.sharing import Access

WORKSPACE = PurePosixPath("/workspace")
OUTPUTS_TARGET = str(WORKSPACE / "outputs")
ALGORITHM_TARGET = str(WORKSPACE / "algorithm")

# A name becomes one folder in every job: no separators, no hidden or relative folders.
FOLDER_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
FOLDER_NAME_MAX = 63


class MountKind(StrEnum):
    ALGORITHM = "algorithm"
    ANNOTATION = "annotation"
    DATASET = "dataset"
    MODEL = "model"
    VOLUME = "volume"
    OUTPUTS = "outputs"


@dataclass(frozen=True)
class Mount:
    source: str  # absolute path under the storage root
    target: str  # absolute path inside the job's container
    read_only: bool
    kind: str  # a MountKind value
    label: str  # what the user picked, e.g. "cifar10/v2"


class UnsafePath(ValueError):
    """A storage path that would leave the storage root, or name nothing. ``code`` says why."""

    def __init__(self, code: str, path: str):
        super().__init__(f"{code}: {path!r}")
        self.code = code
        self.path = path


# --- pure rules ------------------------------------------------------------------------


def is_folder_name(name: str) -> bool:
    """Letters, digits, '-', '_' and '.', not starting with '.', at most 63 characters."""
    return len(name) <= FOLDER_NAME_MAX and FOLDER_NAME.fullmatch(name) is not None


def _folder(name: str) -> str:
    # Stored names were validated by the forms; refusing here keeps a bad row (or a caller
    # passing user input) from producing a target outside its folder.
    if not is_folder_name(name):
        raise ValueError(f"not a folder-safe name: {name!r}")
    return name


def clean_storage_path(path: str) -> str:
    """The canonical form of a relative storage path ("a//b/./c/" -> "a/b/c").

    Raises :class:`UnsafePath` with code ``empty``, ``absolute``, ``parent`` or ``invalid``.
    """
    text = path.strip()
    if any(ord(char) < 32 for char in text) or "\\" in text:
        # Backslashes are separators on some storage and control characters in a mount
        # specification break the backends' command lines.
        raise UnsafePath("invalid", path)
    if text.startswith(("/", "~")):
        raise UnsafePath("absolute", path)
    parts = PurePosixPath(text).parts
    if ".." in parts:
        raise UnsafePath("parent", path)
    if not parts:
        raise UnsafePath("empty", path)
    return "/".join(parts)


def storage_source(path: str, root: Path | str | None = None) -> Path:
    """The absolute folder of a relative storage path, under ``root`` (the storage root).

    Symbolic links are followed, so a link that leads out of the root is refused
    (code ``outside``) as a ``..`` would be; a loop of links has code ``loop``.
    """
    base = Path(root if root is not None else settings.STORAGE_ROOT).resolve()
    try:
        resolved = (base / clean_storage_path(path)).resolve()
    except (RuntimeError, OSError):
        # A symbolic link loop: RuntimeError up to Python 3.12, OSError from 3.13.
        raise UnsafePath("loop", path) from None
    if base not in resolved.parents:
        raise UnsafePath("outside", path)
    return resolved


def annotation_target(name: str) -> str:
    return str(WORKSPACE / "anno_dataset" / _folder(name) / "annotation")


def dataset_target(name: str, version: str, *, own: bool) -> str:
    """One's own dataset at ``private/<name>``; anyone else's at ``favorite/<name>/<version>``."""
    if own:
        return str(WORKSPACE / "dataset" / "private" / _folder(name))
    return str(WORKSPACE / "dataset" / "favorite" / _folder(name) / _folder(version))


def model_target(name: str, version: str, *, own: bool, pretrained: bool) -> str:
    if pretrained:
        return str(WORKSPACE / "model" / "pretrained" / _folder(name))
    if own:
        return str(WORKSPACE / "model" / "private" / _folder(name))
    return str(WORKSPACE / "model" / "favorite" / _folder(name) / _folder(version))


def volume_target(name: str) -> str:
    return str(WORKSPACE / "volume" / _folder(name))


def outputs_subfolder(job_name: str, index: int) -> str:
    """Sub-task ``index`` of batch job ``job_name`` writes into ``<job name>-<index>``."""
    if index < 0:
        raise ValueError(f"negative sub-task index: {index}")
    return _folder(f"{job_name}-{index}")


def duplicate_targets(mounts: Iterable[Mount]) -> list[str]:
    """Targets used more than once (e.g. two users' favourite datasets of one name)."""
    counts = Counter(mount.target for mount in mounts)
    return sorted(target for target, count in counts.items() if count > 1)


# --- catalog objects -------------------------------------------------------------------


def _writable(item, user, access: Access | None) -> bool:
    """Whether ``user`` may write into ``item``'s files (owner, admins, read-write sharing)."""
    if access is None:
        access = item.access_for(user)
    return Access(access) == Access.READ_WRITE


def _read_only(item, user, requested: bool, access: Access | None) -> bool:
    # Asking for read-only needs no lookup; asking to write is granted only with the right.
    return requested or not _writable(item, user, access)


def mount_algorithm(
    algorithm, user, *, read_only: bool = False, access: Access | None = None
) -> Mount:
    return Mount(
        source=str(storage_source(algorithm.path)),
        target=ALGORITHM_TARGET,
        read_only=_read_only(algorithm, user, read_only, access),
        kind=MountKind.ALGORITHM,
        label=algorithm.name,
    )


def mount_annotation(version, user, *, read_only: bool = True, access: Access | None = None):
    """An annotation dataset at a version; read-only unless asked otherwise (and allowed)."""
    annotation_set = version.annotation_set
    return Mount(
        source=str(storage_source(version.path)),
        target=annotation_target(annotation_set.name),
        read_only=_read_only(annotation_set, user, read_only, access),
        kind=MountKind.ANNOTATION,
        label=f"{annotation_set.name}/{version.name}",
    )


def mount_dataset(version, user, *, read_only: bool = False, access: Access | None = None):
    dataset = version.dataset
    return Mount(
        source=str(storage_source(version.path)),
        target=dataset_target(dataset.name, version.name, own=dataset.owner_id == user.pk),
        read_only=_read_only(dataset, user, read_only, access),
        kind=MountKind.DATASET,
        label=f"{dataset.name}/{version.name}",
    )


def mount_model(version, user) -> Mount:
    """Models are always mounted read-only (SPEC J22)."""
    model = version.model
    return Mount(
        source=str(storage_source(version.path)),
        target=model_target(
            model.name,
            version.name,
            own=model.owner_id == user.pk,
            pretrained=model.kind == model.Kind.PRETRAINED,
        ),
        read_only=True,
        kind=MountKind.MODEL,
        label=f"{model.name}/{version.name}",
    )


def mount_volume(volume, user, *, read_only: bool = False, access: Access | None = None):
    """Volumes are writable (SPEC J22), except for users it is shared with read-only."""
    return Mount(
        source=str(storage_source(volume.path)),
        target=volume_target(volume.name),
        read_only=_read_only(volume, user, read_only, access),
        kind=MountKind.VOLUME,
        label=volume.name,
    )


def mount_outputs(path: str, *, job_name: str = "", index: int | None = None) -> Mount:
    """The job's output path at ``/workspace/outputs``; a batch sub-task gets its own folder
    under it, so the script writes to the same place whichever sub-task it is."""
    relative = clean_storage_path(path)
    label = relative
    if index is not None:
        relative = f"{relative}/{outputs_subfolder(job_name, index)}"
        label = outputs_subfolder(job_name, index)
    return Mount(
        source=str(storage_source(relative)),
        target=OUTPUTS_TARGET,
        read_only=False,
        kind=MountKind.OUTPUTS,
        label=label,
    )


def mount_for(thing, user, *, read_only: bool | None = None, access: Access | None = None) -> Mount:
    """The mount of any catalog object (an algorithm, a volume, or a version of the others);
    ``read_only=None`` means the kind's default; ``access`` saves the lookup when known."""
    from resources.models import (
        Algorithm,
        AnnotationVersion,
        DatasetVersion,
        ModelVersion,
        Volume,
    )

    options: dict = {"access": access}
    if read_only is not None:
        options["read_only"] = read_only
    if isinstance(thing, ModelVersion):
        return mount_model(thing, user)
    if isinstance(thing, DatasetVersion):
        return mount_dataset(thing, user, **options)
    if isinstance(thing, AnnotationVersion):
        return mount_annotation(thing, user, **options)
    if isinstance(thing, Algorithm):
        return mount_algorithm(thing, user, **options)
    if isinstance(thing, Volume):
        return mount_volume(thing, user, **options)
    raise TypeError(f"cannot mount a {type(thing).__name__}: pick a version of it")
