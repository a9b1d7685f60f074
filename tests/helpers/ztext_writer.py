"""Write a SWORD zText module (KJV versification) for tests, so they need no installed modules.

Laid out like osis2mod's BlockType=BOOK output: block 0 holds the two header entries, then one zlib block per book
with its intro entry, its chapter-intro entries and its verses. Verses not given are written as empty entries.
"""

import zlib
from pathlib import Path

from frozen_sweep.data.kjv_canon import TESTAMENTS
from frozen_sweep.data.sword import BLOCK_RECORD, VERSE_RECORD, VerseRef


def write_ztext(module_dir: Path, verses: dict[VerseRef, str]) -> Path:
    """Write ot.* and nt.* into module_dir from {ref: OSIS text}; returns module_dir."""
    module_dir = Path(module_dir)
    module_dir.mkdir(parents=True, exist_ok=True)
    for testament, books in TESTAMENTS.items():
        blocks = [[b"", b'<milestone type="x-importer"/>']]  # block 0: module and testament headers
        for book in books:
            entries = [f'<div osisID="{book.osis}" type="book"/><title type="main">{book.name}</title>'.encode()]
            for chapter, n_verses in enumerate(book.verses, start=1):
                entries.append(f'<chapter osisID="{book.osis}.{chapter}"/>'.encode())
                entries += [verses.get(VerseRef(book.osis, chapter, v), "").encode() for v in range(1, n_verses + 1)]
            blocks.append(entries)

        index, block_index, data = bytearray(), bytearray(), bytearray()
        for number, entries in enumerate(blocks):
            offset = 0
            for entry in entries:
                index += VERSE_RECORD.pack(number, offset, len(entry))
                offset += len(entry)
            raw = b"".join(entries)
            packed = zlib.compress(raw)
            block_index += BLOCK_RECORD.pack(len(data), len(packed), len(raw))
            data += packed
        (module_dir / f"{testament}.bzv").write_bytes(bytes(index))
        (module_dir / f"{testament}.bzs").write_bytes(bytes(block_index))
        (module_dir / f"{testament}.bzz").write_bytes(bytes(data))
    return module_dir
