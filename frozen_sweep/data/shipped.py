"""The embedded corpus's two Bibles, shipped inside the package, so that the default task needs no root and no apt.

spaRV1909eb (Reina-Valera 1909) and engKJV2006eb (King James Version) are public domain. Each ships as
`verses/<module>.txt.gz`: the plain text `sword.read_module` gives for every verse of the KJV versification, one
verse a line in canonical order (31,102 lines, an empty line where the module lacks the verse). Reading one is
therefore the same as reading the SWORD module, and alignment, cleaning and the split stay the project's own code
(bible.py). `scripts/ship_verses.py` regenerates the files from installed modules; a test checks they still match.
"""

import gzip
import zlib
from pathlib import Path

from frozen_sweep.data.kjv_canon import TESTAMENTS
from frozen_sweep.data.sword import VerseRef, index_layout
from frozen_sweep.system.files import write_atomic

VERSES_DIR = Path(__file__).with_name("verses")
SUFFIX = ".txt.gz"
REGENERATE_HINT = "reinstall frozen_sweep, or regenerate it with scripts/ship_verses.py from the SWORD modules"
CANON = [ref for books in TESTAMENTS.values() for ref in index_layout(books) if ref is not None]


def shipped_path(module: str) -> Path | None:
    """The shipped file of a SWORD module, or None when the package does not ship that module."""
    path = VERSES_DIR / f"{module}{SUFFIX}"
    return path if path.is_file() else None


def read_shipped(path: Path) -> list[tuple[VerseRef, str]]:
    """(ref, plain text) for every verse, as `sword.read_module` returns them; ValueError naming the file if corrupt."""
    try:
        with gzip.open(path, "rt", encoding="utf-8", newline="\n") as f:
            text = f.read()
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: corrupt shipped corpus file ({e}); {REGENERATE_HINT}") from None
    lines = text.split("\n")
    if lines[-1] != "" or len(lines) - 1 != len(CANON):
        expected = f"expected one per KJV verse ({len(CANON)})"
        raise ValueError(f"{path}: {len(lines) - 1} lines, {expected}; corrupt shipped corpus file; {REGENERATE_HINT}")
    return list(zip(CANON, lines[:-1]))


def write_shipped(path: Path, verses: list[tuple[VerseRef, str]]) -> None:
    """Write `verses` (all of CANON, in order) as a shipped file: byte-for-byte reproducible, written atomically."""
    if [ref for ref, _ in verses] != CANON:
        raise ValueError(f"{path}: verses must be the {len(CANON)} KJV verses in canonical order")
    if any("\n" in text for _, text in verses):
        raise ValueError(f"{path}: a verse holds a line break; verses are one per line")
    data = "".join(text + "\n" for _, text in verses).encode("utf-8")

    def write(raw) -> None:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
            f.write(data)

    write_atomic(path, write)
