"""The embedded classification tasks: English verses (KJV) labelled by the part of the canon they come from, written
as {train,valid,test}.tsv for data/tsv.py.

Classes (`task.bible_labels=division`, 6): law (Genesis–Deuteronomy), history (Joshua–Esther), wisdom (Job–Song of
Songs), prophets (Isaiah–Malachi, and Revelation), gospels (Matthew–John), acts_epistles (Acts–Jude): the divisions
of the Protestant canon that the books' order already follows. Revelation joins the prophets: it calls itself "the
words of this prophecy" and is apocalyptic like Daniel and Zechariah; alone it would be a class of 22 chapters with
one test chapter. Verses per class: history 7,018, prophets 5,894, law 5,852, wisdom 4,785, gospels 3,779,
acts_epistles 3,774; the majority class is near 23% of each split.

`task.bible_labels=same_division`: sentence pairs, "are these two verses from the same part of the canon?" (labels
same / different, each with probability 1/2 by a seeded draw per verse; the partner is a random other verse of the same
split, from the same division or from another one). Not "the same book": most books have no or one held-out chapter,
so held-out "same book" pairs would be "same chapter" pairs, an easier task than the training pairs.

The split is mlm_bible_en's and lm_bible_en's (data/bible.py: whole chapters, c % 25 == 12 test, 24 valid), and train
loses its exact copies of held-out verses the same way, so a masked LM pre-trained on mlm_bible_en has never read a
valid or test verse of these tasks.
"""

import hashlib
import json
from pathlib import Path

import numpy as np

from frozen_sweep.config import BibleLabels
from frozen_sweep.data.bible import SPLITS, cache_key, module_sources, split_of, verse_rows
from frozen_sweep.data.kjv_canon import BOOKS
from frozen_sweep.system.files import write_dir_atomic

LABELS_VERSION = 1  # bump when the classes, the pairs or their draw change: part of the data identity
FIRST_BOOK = {"Gen": "law", "Josh": "history", "Job": "wisdom", "Isa": "prophets", "Matt": "gospels",
              "Acts": "acts_epistles", "Rev": "prophets"}  # fmt: skip


def divisions() -> dict[str, str]:
    """OSIS book id → its division, in canonical order."""
    out, current = {}, None
    for book in BOOKS:
        current = FIRST_BOOK.get(book.osis, current)
        out[book.osis] = current
    return out


def labelled_verses(task_cfg) -> dict[str, list[tuple[str, str]]]:
    """(text, division) rows per split, train less exact copies of held-out verses."""
    rows, _ = verse_rows(module_sources(task_cfg), task_cfg.max_length_ratio)
    division = divisions()
    splits = {name: [] for name in SPLITS}
    for ref, text in rows:
        splits[split_of(ref)].append((text.replace("\t", " "), division[ref.book]))
    held_out = {text for name in ("valid", "test") for text, _ in splits[name]}
    splits["train"] = [row for row in splits["train"] if row[0] not in held_out]
    return splits


def same_division_pairs(rows: list[tuple[str, str]], split: str) -> list[tuple[str, str, str]]:
    """One pair per verse: (verse, partner, same|different), drawn by numpy's PCG64 seeded from the split's name."""
    rng = np.random.Generator(np.random.PCG64(int.from_bytes(hashlib.sha256(f"pairs/{split}".encode()).digest()[:8])))
    labels = np.array([label for _, label in rows])
    by_label = {label: np.flatnonzero(labels == label) for label in sorted(set(labels))}
    pairs = []
    for i, (text, label) in enumerate(rows):
        same = rng.random() < 0.5
        pool = by_label[label] if same else np.flatnonzero(labels != label)
        j = int(pool[rng.integers(len(pool))])
        while j == i:  # a verse is never its own partner
            j = int(pool[rng.integers(len(pool))])
        pairs.append((text, rows[j][0], "same" if same else "different"))
    return pairs


def extract_labelled_bible(task_cfg) -> Path:
    """Directory holding {train,valid,test}.tsv and stats.json for the task; built once, renamed into place whole."""
    kind = BibleLabels(task_cfg.bible_labels)
    sources = module_sources(task_cfg)
    key = f"{cache_key(sources, task_cfg.max_length_ratio)}-{kind.value}-v{LABELS_VERSION}"
    final = Path(task_cfg.cache_dir).expanduser() / "bible" / key
    if final.is_dir():
        return final
    splits = labelled_verses(task_cfg)
    if kind == BibleLabels.same_division:
        splits = {name: same_division_pairs(rows, name) for name, rows in splits.items()}
    final.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: Path) -> None:
        for name, rows in splits.items():
            (tmp / f"{name}.tsv").write_text("".join("\t".join(row) + "\n" for row in rows), encoding="utf-8")
        stats = {"labels": kind.value, "labels_version": LABELS_VERSION,
                 "sizes": {name: len(rows) for name, rows in splits.items()}}  # fmt: skip
        (tmp / "stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")

    write_dir_atomic(final, write)
    return final
