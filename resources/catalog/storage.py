"""Who may do what with a folder of the storage root: ownership of storage paths.

Every user has a folder of their own, ``users/<name>/`` (their outputs, and whatever they
register in the catalog). Beyond it, a user reaches storage only through catalog items: an
item's folder (and its versions' folders) is open to a user as far as the item is
(:meth:`CatalogItem.access_for`: the owner and admins read-write, members of its project as
its others' access says, everyone read-only for platform-wide items). Everything else —
another user's folder, the platform's own folders — is writable by platform admins only.

So a job's writable mounts (its output folder above all) and every folder registered in the
catalog are checked here: a path typed into a form can never reach someone else's files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from console.sharing import RANK, Access
from resources.catalog.mounts import clean_storage_path, is_folder_name

USERS = "users"
OUTPUTS = "outputs"


def personal_folder(user) -> str:
    """``users/<name>``: the user's own part of the storage root."""
    name = user.get_username()
    return f"{USERS}/{name if is_folder_name(name) else f'user-{user.pk}'}"


def job_output_folder(user, job_name: str, job_id: int) -> str:
    """A job's own output folder, the default: ``users/<name>/outputs/<job>-<id>``."""
    return f"{personal_folder(user)}/{OUTPUTS}/{job_name}-{job_id}"


def contains(folder: str, path: str) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (whole path parts, not prefixes)."""
    outer, inner = PurePosixPath(folder).parts, PurePosixPath(path).parts
    return inner[: len(outer)] == outer


def enclosing_folders(path: str) -> list[str]:
    """``path`` and every folder above it: "a/b/c" -> ["a", "a/b", "a/b/c"]."""
    parts = PurePosixPath(path).parts
    return ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]


def overlap(first: str, second: str) -> bool:
    """Whether writing to one folder may write into the other (equal or nested)."""
    return contains(first, second) or contains(second, first)


@dataclass(frozen=True)
class Standing:
    """What a user may do with a path, and, when it is less than everything, whose it is."""

    access: Access
    owner: str = ""  # the username whose folder it is ("" for the platform's)
    item: object = None  # the catalog item that opens it to the user, if any

    @property
    def writable(self) -> bool:
        return self.access == Access.READ_WRITE


def standing(user, path: str) -> Standing:
    """What ``user`` may do with the storage path ``path`` (already clean and relative)."""
    if user.is_staff:
        return Standing(Access.READ_WRITE)
    own = personal_folder(user)
    if contains(own, path):
        return Standing(Access.READ_WRITE, owner=user.get_username())
    best = Standing(Access.NONE, owner=_folder_owner(path))
    for item in _items_containing(path):
        access = item.access_for(user)
        if RANK[access] > RANK[best.access]:
            best = Standing(access, owner=item.owner.get_username(), item=item)
    return best


def _folder_owner(path: str) -> str:
    parts = PurePosixPath(path).parts
    return parts[1] if len(parts) > 1 and parts[0] == USERS else ""


def _items_containing(path: str) -> list:
    """Catalog items whose folder, or one of whose versions' folders, holds ``path``."""
    from resources.models import (
        Algorithm,
        AnnotationSet,
        AnnotationVersion,
        Dataset,
        DatasetVersion,
        ModelVersion,
        TrainedModel,
        Volume,
    )

    folders = enclosing_folders(path)
    found = []
    for model in (Algorithm, AnnotationSet, Dataset, TrainedModel, Volume):
        found += model.objects.filter(path__in=folders).select_related("owner", "project")
    for version_model, parent in (
        (DatasetVersion, "dataset"),
        (AnnotationVersion, "annotation_set"),
        (ModelVersion, "model"),
    ):
        rows = version_model.objects.filter(path__in=folders).select_related(
            f"{parent}__owner", f"{parent}__project"
        )
        found += [getattr(row, parent) for row in rows]
    return found


class NotYours(ValueError):
    """A path the user may not write to; ``standing`` says whose it is and why."""

    def __init__(self, path: str, standing: Standing):
        super().__init__(path)
        self.path = path
        self.standing = standing


def check_writable(user, path: str) -> str:
    """The clean form of ``path`` if ``user`` may write there; :class:`NotYours` otherwise
    (and :class:`resources.catalog.mounts.UnsafePath` for a path that is no storage path at all)."""
    clean = clean_storage_path(path)
    found = standing(user, clean)
    if not found.writable:
        raise NotYours(clean, found)
    return clean


def refusal(user, error: NotYours) -> str:
    """Why ``user`` may not write to the path of ``error``, and where they may, in words."""
    from django.utils.translation import gettext as _

    found = error.standing
    where = _(
        "Pick a folder in your own storage, %(own)s/…, or in a volume shared with you read-write."
    ) % {"own": personal_folder(user)}
    if found.item is not None:
        why = _("“%(item)s” (%(owner)s's) is shared with you read-only: you may not write there.")
        why %= {"item": found.item.name, "owner": found.owner}
    elif found.owner:
        why = _("This folder belongs to %(owner)s: you may not write there.") % {
            "owner": found.owner
        }
    else:
        why = _("Only platform admins may write here, outside the users' folders.")
    return f"{why} {where}"
