"""A cluster's CA certificate is handed to the Kubernetes client as a file: one per distinct
certificate in a process, removed when the process exits (each process that talked to a
cluster used to leave its file in the temporary folder for good)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
from resources.backends.kubernetes.api import _ca_file
first = _ca_file("-----BEGIN CERTIFICATE-----\\nA\\n-----END CERTIFICATE-----\\n")
again = _ca_file("-----BEGIN CERTIFICATE-----\\nA\\n-----END CERTIFICATE-----\\n")
other = _ca_file("-----BEGIN CERTIFICATE-----\\nB\\n-----END CERTIFICATE-----\\n")
print(first, again, other)
"""


def test_each_certificate_has_one_file_removed_when_the_process_exits(tmp_path):
    folder = tmp_path / "tmp"
    folder.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True, text=True, timeout=60, check=True,
        env={"PATH": "", "TMPDIR": str(folder)},
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    first, again, other = (Path(name) for name in done.stdout.split())
    assert first == again != other
    assert first.parent == other.parent == folder
    assert list(folder.iterdir()) == []  # both gone with the process
