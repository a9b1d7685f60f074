"""A stdlib-only reader of SWORD zText Bible modules (KJV versification), returning plain-text verses.

A zText module stores each testament as three files:
  {ot,nt}.bzv  one 10-byte record `<IIH` per index entry: block number, offset in the decompressed block, length
  {ot,nt}.bzs  one 12-byte record `<III` per block: offset in .bzz, compressed size, uncompressed size
  {ot,nt}.bzz  the zlib-compressed blocks, concatenated
The index is positional: 2 header entries (module, testament), then per book one book-intro entry and per chapter
one chapter-intro entry followed by that chapter's verses. Intro entries hold markup only (book titles, chapter
milestones, the odd Psalm 119 acrostic heading), never verse text, so they are skipped.

Verse entries are OSIS XML fragments; `osis_to_text` turns them into plain text (see there for the rules).
"""

import html
import re
import struct
import zlib
from pathlib import Path
from typing import NamedTuple

from frozen_sweep.data.kjv_canon import TESTAMENTS, Book

VERSE_RECORD = struct.Struct("<IIH")  # .bzv: block, offset, length
BLOCK_RECORD = struct.Struct("<III")  # .bzs: offset in .bzz, compressed size, uncompressed size
HEADER_ENTRIES = 2  # module header, testament header


class VerseRef(NamedTuple):
    book: str  # OSIS id, e.g. "Gen"
    chapter: int
    verse: int

    def __str__(self) -> str:
        return f"{self.book} {self.chapter}:{self.verse}"


def index_layout(books: tuple[Book, ...]) -> list[VerseRef | None]:
    """The index entry at each position of a testament's .bzv: a VerseRef, or None for header/intro entries."""
    layout: list[VerseRef | None] = [None] * HEADER_ENTRIES
    for book in books:
        layout.append(None)  # book intro
        for chapter, n_verses in enumerate(book.verses, start=1):
            layout.append(None)  # chapter intro
            layout.extend(VerseRef(book.osis, chapter, v) for v in range(1, n_verses + 1))
    return layout


class _Blocks:
    """The .bzz blocks of one testament, each decompressed once, on first use."""

    def __init__(self, bzs: Path, bzz: Path):
        raw = bzs.read_bytes()
        if len(raw) % BLOCK_RECORD.size:
            raise ValueError(f"{bzs}: size {len(raw)} is not a multiple of {BLOCK_RECORD.size}; corrupt block index")
        self.records = [BLOCK_RECORD.unpack_from(raw, i) for i in range(0, len(raw), BLOCK_RECORD.size)]
        self.data = bzz.read_bytes()
        self.path = bzz
        self.cache: dict[int, bytes] = {}

    def get(self, number: int) -> bytes:
        if number not in self.cache:
            if number >= len(self.records):
                raise ValueError(f"{self.path}: the index refers to block {number}, but there are {len(self.records)}")
            offset, size, expected = self.records[number]
            block = zlib.decompress(self.data[offset : offset + size])
            if len(block) != expected:
                raise ValueError(f"{self.path}: block {number} inflates to {len(block)} bytes, index says {expected}")
            self.cache[number] = block
        return self.cache[number]


def read_testament_raw(module_dir: Path, testament: str) -> list[tuple[VerseRef, str]]:
    """(ref, OSIS markup) for every verse of one testament, in canonical order; [] if the module lacks it."""
    files = {ext: module_dir / f"{testament}.{ext}" for ext in ("bzv", "bzs", "bzz")}
    present = [p.exists() for p in files.values()]
    if not any(present):
        return []  # e.g. a New-Testament-only module
    if not all(present):
        missing = ", ".join(str(p) for p in files.values() if not p.exists())
        raise FileNotFoundError(f"incomplete SWORD zText module: missing {missing}")

    index = files["bzv"].read_bytes()
    layout = index_layout(TESTAMENTS[testament])
    if len(index) != len(layout) * VERSE_RECORD.size:
        raise ValueError(
            f"{files['bzv']} has {len(index) / VERSE_RECORD.size:g} index entries but the KJV versification needs "
            f"{len(layout)}: the module is not a zText module in KJV versification"
        )
    blocks = _Blocks(files["bzs"], files["bzz"])
    verses = []
    for position, ref in enumerate(layout):
        if ref is None:
            continue
        number, offset, length = VERSE_RECORD.unpack_from(index, position * VERSE_RECORD.size)
        raw = blocks.get(number)[offset : offset + length] if length else b""
        try:
            verses.append((ref, raw.decode("utf-8")))
        except UnicodeDecodeError as e:
            raise ValueError(f"{module_dir}: {ref} is not valid UTF-8 ({e})") from None
    return verses


def read_module_raw(module_dir: Path) -> list[tuple[VerseRef, str]]:
    """(ref, OSIS markup) for all 31,102 KJV verses (fewer if a testament is absent), in canonical order."""
    module_dir = Path(module_dir)
    verses = read_testament_raw(module_dir, "ot") + read_testament_raw(module_dir, "nt")
    if not verses:
        raise FileNotFoundError(f"{module_dir}: no SWORD zText module here (expected ot.bzv/nt.bzv and friends)")
    return verses


# ---- OSIS markup to plain text -------------------------------------------------------------------------------------

_NOTE = re.compile(r"<note\b[^>]*>.*?</note>", re.DOTALL)  # footnotes and cross-references: not part of the text
_TITLE = re.compile(r"<title\b(?P<attrs>[^>]*)>.*?</title>", re.DOTALL)
_USFM = re.compile(r"\\\+?[a-z]+\d*\*? ?")  # USFM markers the converter left behind, e.g. "\nd LORD\+nd*"
_EMPTY_TAG = re.compile(r"<[^>]*/>")  # milestones (<l sID=../>, <lb/>, <div sID=../>): may separate words
_TAG = re.compile(r"<[^>]*>")  # inline elements (<w>, <transChange>, <q>, <divineName>...): keep their words
_SPACE = re.compile(r"\s+")


def _drop_heading(match: re.Match) -> str:
    # canonical="true" titles are the Psalm superscriptions ("A Psalm of David..."): scripture, which the Spanish
    # module has as plain verse text, so they stay; other titles are editorial headings.
    return match.group(0) if 'canonical="true"' in match.group("attrs") else " "


def osis_to_text(markup: str) -> str:
    """Plain text of an OSIS verse: notes and editorial headings dropped, words of other markup kept, entities
    unescaped, the paragraph sign removed, whitespace collapsed."""
    text = _NOTE.sub("", markup)
    text = _TITLE.sub(_drop_heading, text)
    text = _USFM.sub("", text)
    text = _EMPTY_TAG.sub(" ", text)
    text = _TAG.sub("", text)
    text = html.unescape(text).replace("\u00b6", " ")  # ¶ marks a paragraph start in the KJV
    return _SPACE.sub(" ", text).strip()


def read_module(module_dir: Path) -> list[tuple[VerseRef, str]]:
    """(ref, plain text) for every verse of the versification, in canonical order; verses the module lacks are ""."""
    return [(ref, osis_to_text(markup)) for ref, markup in read_module_raw(module_dir)]
