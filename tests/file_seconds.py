"""How long each test file takes, so the slowest start first.

The test processes share the suite a file at a time (`make test`: ``--dist loadfile``). Left
to itself, pytest-xdist hands out the files with the most tests first, and the few files that
take minutes with a handful of tests (the fuzzer, the soak, the chaos run) start last: one
process then works alone for minutes at the end while the others wait. ``FILE_SECONDS`` (the
seconds each file took in a measured run) lets ``tests/conftest.py`` start the longest files
first instead, so that the processes finish together.

Measure again after a test file grows or a new slow one lands:

    make test PYTEST_ARGS="--junitxml=test-artifacts/suite.xml"
    .venv/bin/python -m tests.file_seconds test-artifacts/suite.xml

A file missing from the list (a new one) runs after the listed ones, in collection order: the
order changes only when each file starts, never what runs.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

FILE_SECONDS = Path(__file__).with_name("file_seconds.txt")


def load(path: Path = FILE_SECONDS) -> dict[str, float]:
    """{test file relative to the checkout: seconds}; empty when there is no list."""
    if not path.exists():
        return {}
    seconds = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            value, name = line.split(maxsplit=1)
            seconds[name] = float(value)
    return seconds


def from_junit(report: Path) -> dict[str, float]:
    """Seconds per test file in a JUnit XML report of pytest's (its ``classname`` is the
    module's dotted path, then any class)."""
    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(report).iter("testcase"):
        parts = case.get("classname", "").split(".")
        # tests.jobs.test_x.TestY -> tests/jobs/test_x.py: the module is the last test_ part.
        upto = max(i for i, part in enumerate(parts) if part.startswith("test")) + 1
        seconds["/".join(parts[:upto]) + ".py"] += float(case.get("time") or 0)
    return dict(seconds)


def write(seconds: dict[str, float], path: Path = FILE_SECONDS) -> None:
    lines = [f"{value:.1f} {name}" for name, value in sorted(seconds.items(), key=lambda i: -i[1])]
    header = "# seconds per test file in a measured run, longest first (tests/file_seconds.py)\n"
    path.write_text(header + "\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.file_seconds REPORT.xml")
    measured = from_junit(Path(sys.argv[1]))
    write(measured)
    print(f"{FILE_SECONDS.name}: {len(measured)} files, {sum(measured.values()):.0f} s in all")
