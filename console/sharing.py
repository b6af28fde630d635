"""Others' access (SPEC P): what members of the same project may do with someone's things."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class Access(models.TextChoices):
    NONE = "none", _("None")
    READ_ONLY = "read_only", _("Read-only")
    READ_WRITE = "read_write", _("Read-write")


RANK = {Access.NONE: 0, Access.READ_ONLY: 1, Access.READ_WRITE: 2}


def at_most(*levels: str) -> Access:
    """The lowest of the given levels: a job may not share more than its resources allow."""
    return min((Access(level) for level in levels), key=RANK.__getitem__, default=Access.READ_WRITE)


def allows(level: str, wanted: str) -> bool:
    return RANK[Access(level)] >= RANK[Access(wanted)]
