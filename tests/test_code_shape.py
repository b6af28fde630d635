"""The code's shape (docs/architecture.md, "Code layout"): no module of the apps over 400
lines, no function over 60 (from its ``def`` to its last line), migrations aside."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("console", "jobs", "resources")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def modules():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.relative_to(ROOT).parts:
                yield path


def test_no_module_over_400_lines():
    long = []
    for path in modules():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            long.append(f"{lines:5} {path.relative_to(ROOT)}")
    assert not long, f"modules over {MAX_MODULE_LINES} lines:\n" + "\n".join(long)


def test_no_function_over_60_lines():
    long = []
    for path in modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{lines:5} {path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)
