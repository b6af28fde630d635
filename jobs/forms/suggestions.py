"""An algorithm's suggested launch in the job form (SPEC J6, J8, J13, J14, J16).

Under the algorithm (and each batch sub-task's) the form says what the chosen algorithm
suggests, with a button that takes it: image, mode and node count for the job, the command
for that algorithm's job or row. Picking an algorithm while its command is empty fills the
command at once. Both are form actions (``row_action``), like the row buttons: htmx posts
them to the refresh, and without JavaScript the button posts the whole form.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from console.modes import Mode, may_have_parameter_servers, only_node_count
from console.params import whole_number
from jobs.forms import rows
from resources.models import Algorithm, Image

USE = "use_suggestion"  # "use_suggestion" for the job's algorithm, "use_suggestion:<row>"
PICKED = "algorithm_picked"  # posted by the algorithm field when it changes; same targets
NOT_OFFERED = _("not offered for training jobs")


@dataclass(frozen=True)
class Suggestion:
    algorithm: Algorithm
    action: str  # the row_action that takes it
    image: Image | None  # the suggested image, when the form may pick it
    image_missing: str  # the suggested image's name when it may not, with why in ``why``
    why: str
    mode: str
    node_count: int | None  # the one a single-node mode allows, if none is named
    command: str
    in_use: bool  # the form already holds everything it suggests

    @property
    def mode_label(self) -> str:
        # A value stored outside the forms is shown as it is rather than failing the page.
        return dict(Mode.choices).get(self.mode, self.mode)

    @property
    def says_node_count(self) -> bool:
        """Worth saying: "Single node · 1 node" would say it twice."""
        return bool(self.node_count) and only_node_count(self.mode) is None


def acts_on(action: str) -> bool:
    return _parse(action) is not None


def _parse(action: str) -> tuple[str, int | None] | None:
    """(verb, sub-task row or None for the job's own algorithm), or None if not ours."""
    verb, colon, row = (action or "").partition(":")
    if verb not in (USE, PICKED):
        return None
    if not colon:
        return verb, None
    index = whole_number(row)
    return None if index is None else (verb, index)


def _fields(row: int | None) -> tuple[str, str]:
    """The algorithm's and command's field names of the job or of a sub-task row."""
    if row is None:
        return "algorithm", "command"
    return rows.SUBTASKS.name(row, "algorithm"), rows.SUBTASKS.name(row, "command")


def suggestion(form, row: int | None = None) -> Suggestion | None:
    """What the algorithm chosen in the job (or sub-task ``row``) suggests, if anything."""
    return suggestions(form, [row])[0]


def suggestions(form, targets: list[int | None]) -> list[Suggestion | None]:
    """The suggestion of each target (a sub-task row, or None for the job's algorithm), in
    two queries however many rows there are."""
    chosen = {}
    for row in targets:
        field = _fields(row)[0]
        if field in form.fields:
            pk = whole_number(str(form.value(field) or ""))
            if pk is not None:
                chosen[row] = pk
    if not chosen:
        return [None] * len(targets)
    # Among the algorithms the user may pick (the rows offer the same): others' stay unseen.
    offered = form.fields["algorithm"].queryset.select_related("suggested_image")
    found = {a.pk: a for a in offered.filter(pk__in=set(chosen.values())) if a.has_suggestion}
    images = {a.suggested_image_id for a in found.values()} - {None}
    pickable = set(form.fields["image"].queryset.filter(pk__in=images).values_list("pk", flat=True))
    return [
        _suggestion(form, row, found[chosen[row]], pickable) if chosen.get(row) in found else None
        for row in targets
    ]


def _suggestion(form, row: int | None, algorithm: Algorithm, pickable: set[int]) -> Suggestion:
    image, missing, why = _image(form, algorithm.suggested_image, pickable)
    nodes = algorithm.suggested_nodes or only_node_count(algorithm.suggested_mode)
    command = algorithm.suggested_command.strip()
    wanted = {
        "image": str(image.pk) if image else None,
        "mode": algorithm.suggested_mode or None,
        "node_count": str(nodes) if nodes else None,
        _fields(row)[1]: command or None,
    }
    in_use = all(
        value is None or str(form.value(name) or "").strip() == value
        for name, value in wanted.items()
    )
    return Suggestion(
        algorithm=algorithm,
        action=USE if row is None else f"{USE}:{row}",
        image=image,
        image_missing=missing,
        why=why,
        mode=algorithm.suggested_mode,
        node_count=nodes,
        command=command,
        in_use=in_use,
    )


def _image(form, image: Image | None, pickable: set[int]) -> tuple[Image | None, str, str]:
    """(image to fill, name of one that may not be picked, why): retired, not for training,
    or without a runtime where the job would run on this machine's nodes."""
    if image is None:
        return None, "", ""
    why = form.fields["image"].widget.unavailable.get(str(image.pk), "")
    if not why and image.pk not in pickable:
        why = str(NOT_OFFERED)
    if why:
        return None, image.name, why
    return image, "", ""


def apply(form, action: str):
    """A copy of the form's data with the action done: ``use_suggestion`` fills image,
    mode, node count and command; ``algorithm_picked`` fills only an empty command. What
    the suggestion does not name stays as typed."""
    parsed = _parse(action)
    if parsed is None:
        return form.data
    verb, row = parsed
    found = suggestion(form, row)
    if found is None:
        return form.data
    data = form.data.copy()
    command_field = _fields(row)[1]
    if verb == PICKED:
        if found.command and not str(data.get(command_field, "")).strip():
            data[command_field] = found.command
        return data
    if found.command:
        data[command_field] = found.command
    if found.image is not None:
        data["image"] = str(found.image.pk)
    if found.mode:
        data["mode"] = found.mode
        if not may_have_parameter_servers(found.mode):
            data["ps_count"] = "0"  # parameter servers are TensorFlow's alone
    if found.node_count:
        data["node_count"] = str(found.node_count)
    return data
