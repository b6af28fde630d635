"""Repeating rows of the job form: batch sub-tasks and mounted datasets.

Rows are plain fields named ``subtask_<i>_command`` or ``dataset_<i>_version``; the count
travels in a hidden field, and the add/remove buttons post ``row_action``. The form is
re-rendered with what was typed, so nothing is lost.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.params import whole_number

MAX_ROWS = 50


@dataclass(frozen=True)
class RowKind:
    prefix: str  # "subtask" or "dataset"
    fields: tuple[str, ...]
    minimum: int  # rows shown when there is nothing yet

    def count_field(self) -> str:
        return f"{self.prefix}_count"

    def name(self, index: int, field: str) -> str:
        return f"{self.prefix}_{index}_{field}"


SUBTASKS = RowKind("subtask", ("algorithm", "algorithm_read_only", "command"), 2)
DATASETS = RowKind("dataset", ("version", "read_only"), 0)
KINDS = {kind.prefix: kind for kind in (SUBTASKS, DATASETS)}


def _count(data, kind: RowKind) -> int:
    try:
        return max(0, min(int(data.get(kind.count_field(), kind.minimum)), MAX_ROWS))
    except (TypeError, ValueError):
        return kind.minimum


def apply_row_action(data, action: str):
    """``add_subtask`` / ``remove_dataset:2``: a copy of the (Query)dict with rows changed."""
    verb, _, rest = (action or "").partition("_")
    prefix, _, index_text = rest.partition(":")
    kind = KINDS.get(prefix)
    if kind is None:
        return data
    data = data.copy()
    count = _count(data, kind)
    removed = whole_number(index_text)
    if verb == "add" and count < MAX_ROWS:
        data[kind.count_field()] = str(count + 1)
        if kind is DATASETS:
            data[kind.name(count, "read_only")] = "on"  # read-only unless unticked
    elif verb == "remove" and removed is not None and removed < count:
        for index in range(removed, count - 1):
            for field in kind.fields:
                data[kind.name(index, field)] = data.get(kind.name(index + 1, field), "")
        for field in kind.fields:
            data.pop(kind.name(count - 1, field), None)
        data[kind.count_field()] = str(count - 1)
    return data


def row_count(data, kind: RowKind) -> int:
    return _count(data, kind)
