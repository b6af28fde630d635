"""Compile the translation catalogues (.po to .mo) without GNU gettext.

Run as ``python -m console.catalogues`` at install, so a bare machine needs no ``msgfmt``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

LOCALE_DIR = Path(__file__).resolve().parent / "locale"


def compile_all(locale_dir: Path = LOCALE_DIR) -> int:
    compiled = 0
    for po_path in sorted(locale_dir.glob("*/LC_MESSAGES/*.po")):
        with po_path.open("rb") as source:
            catalogue = read_po(source, locale=po_path.parts[-3])
        with po_path.with_suffix(".mo").open("wb") as target:
            write_mo(target, catalogue, use_fuzzy=False)
        compiled += 1
    return compiled


if __name__ == "__main__":
    count = compile_all()
    print(
        "Compiled 1 translation catalogue."
        if count == 1
        else f"Compiled {count} translation catalogues."
    )
    sys.exit(0 if count else 1)
