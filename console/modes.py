"""Distributed modes (SPEC J8) and their node-count rule.

Jobs run in a mode, and a catalog algorithm may suggest one: both apps read them here, so
that resources never imports jobs and the rule is worded once.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

MAX_NODES = 1000  # the most nodes a job (or an algorithm's suggestion) may ask for


class Mode(models.TextChoices):
    SINGLE = "single", _("Single node")
    MPI = "mpi", _("Horovod / MPI")
    TENSORFLOW = "tensorflow", _("TensorFlow")
    PYTORCH = "pytorch", _("PyTorch")
    DEEPSPEED = "deepspeed", _("PyTorch-DeepSpeed")


def only_node_count(mode: str) -> int | None:
    """The one node count a mode allows, if it allows only one."""
    return 1 if mode == Mode.SINGLE else None


def node_count_problem(mode: str, nodes: int | None) -> str | None:
    """Why ``nodes`` does not suit ``mode``, in words for the node count's field."""
    only = only_node_count(mode)
    if only is not None and nodes and nodes != only:
        return _("A single-node job runs on one node. Pick a distributed mode to use %(n)s.") % {
            "n": nodes
        }
    return None
