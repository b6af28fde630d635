"""Distributed modes (SPEC J8) and their rules, as data: the one list of modes.

Jobs run in a mode, a catalog algorithm may suggest one, the launch builds each mode's
replicas and a runtime holds what some modes need: all of them read the modes and their
rules here (the bottom floor every app may import), so that resources never imports jobs
and each rule is written once. Nothing here reads settings or the database: the launch,
which is pure, asks it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models
from django.utils.translation import gettext_lazy as _

MAX_NODES = 1000  # the most nodes a job (or an algorithm's suggestion) may ask for


class Mode(models.TextChoices):
    SINGLE = "single", _("Single node")
    MPI = "mpi", _("Horovod / MPI")
    TENSORFLOW = "tensorflow", _("TensorFlow")
    PYTORCH = "pytorch", _("PyTorch")
    DEEPSPEED = "deepspeed", _("PyTorch-DeepSpeed")


@dataclass(frozen=True)
class Rules:
    """What a mode allows and needs.

    ``single_node``: it runs on exactly one node. ``parameter_servers``: it may have
    parameter servers beside its workers (TensorFlow's "ps" tasks). ``needs_mpi``: its
    replicas run mpirun and MPI's libraries, which a runtime may lack.
    """

    single_node: bool = False
    parameter_servers: bool = False
    needs_mpi: bool = False


RULES: dict[str, Rules] = {
    Mode.SINGLE.value: Rules(single_node=True),
    Mode.MPI.value: Rules(needs_mpi=True),
    Mode.TENSORFLOW.value: Rules(parameter_servers=True),
    Mode.PYTORCH.value: Rules(),
    Mode.DEEPSPEED.value: Rules(),
}
# The modes as plain strings, in the form's order.
MODES: tuple[str, ...] = tuple(mode.value for mode in Mode)
# An unknown mode (a form's unchecked draft) is held to no rule but those of any mode.
_NO_RULES = Rules()


def rules_of(mode: str) -> Rules:
    return RULES.get(mode, _NO_RULES)


def only_node_count(mode: str) -> int | None:
    """The one node count a mode allows, if it allows only one."""
    return 1 if rules_of(mode).single_node else None


def node_count_problem(mode: str, nodes: int | None) -> str | None:
    """Why ``nodes`` does not suit ``mode``, in words for the node count's field."""
    only = only_node_count(mode)
    if only is not None and nodes and nodes != only:
        return _("A single-node job runs on one node. Pick a distributed mode to use %(n)s.") % {
            "n": nodes
        }
    return None


def may_have_parameter_servers(mode: str) -> bool:
    return rules_of(mode).parameter_servers


def modes_needing_mpi() -> tuple[str, ...]:
    return tuple(mode for mode in MODES if RULES[mode].needs_mpi)
