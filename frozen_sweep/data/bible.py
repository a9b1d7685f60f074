"""The embedded corpus: Bible verses from two SWORD modules, as plain-text train/valid/test files.

The two modules of the default tasks ship inside the package (data/shipped.py); any other pair is read from SWORD
zText modules under task.sword_dir.

Split rule (SPLIT_VERSION 1). The Bible repeats itself (parallel passages, formulas, genealogies), so a random
verse-level split leaks near-copies of test verses into training. Whole chapters are held out instead: number the
1,189 chapters 0..1188 in canonical order (Gen 1 = 0, Rev 22 = 1188); chapter c goes to test if c % 25 == 12, to
valid if c % 25 == 24, otherwise to train. That is 48 test and 47 valid chapters spread evenly from Genesis to
Revelation. Any train pair that equals a valid/test pair exactly is then removed from train.

Sizes for spaRV1909eb -> engKJV2006eb with max_length_ratio 2.5: of 31,102 verses, 18 are dropped with an empty side,
697 in 26 out-of-step chapters and 8 as misaligned (see align.py); train 27,964 (58 copies of held-out pairs
removed), valid 1,271, test 1,086. LM on engKJV2006eb (no empty verses): train 28,481 (94 copies removed), valid
1,328, test 1,199.
"""

import hashlib
import json
import logging
from pathlib import Path

from frozen_sweep.data.align import align
from frozen_sweep.data.kjv_canon import BOOKS
from frozen_sweep.data.shipped import read_shipped, shipped_path
from frozen_sweep.data.sword import VerseRef, read_module
from frozen_sweep.data.text_files import langs_of
from frozen_sweep.system.files import write_dir_atomic

log = logging.getLogger(__name__)

SPLIT_VERSION = 1  # bump when the extraction, cleaning or split rule changes: it is part of the cache key
HELD_OUT_EVERY = 25
TEST_REMAINDER, VALID_REMAINDER = 12, 24
SPLITS = ("train", "valid", "test")

INSTALL_HINT = (
    "the package ships only the embedded corpus's modules (see data/shipped.py); read others from SWORD zText "
    "modules, e.g. on Debian `apt-get install --no-install-recommends sword-text-<name>` (as root), or copy a "
    "module's directory anywhere and point task.sword_dir= at its parent"
)

CHAPTER_INDEX = {
    (book.osis, chapter): i
    for i, (book, chapter) in enumerate((b, c) for b in BOOKS for c in range(1, len(b.verses) + 1))
}


def split_of(ref: VerseRef) -> str:
    """The split a verse belongs to, by the chapter rule in the module docstring."""
    remainder = CHAPTER_INDEX[ref.book, ref.chapter] % HELD_OUT_EVERY
    return {TEST_REMAINDER: "test", VALID_REMAINDER: "valid"}.get(remainder, "train")


def module_sources(task_cfg) -> dict[str, Path]:
    """{language: its verses' source} for the languages the task uses: the file shipped in the package for the
    embedded corpus's modules (the same text on every machine), else the SWORD module directory under
    task.sword_dir; a clear error if neither exists."""
    langs = langs_of(task_cfg)
    if len(set(langs)) != len(langs):
        raise ValueError(f"task.src_lang and task.tgt_lang are both '{langs[0]}'")
    sword_dir = Path(task_cfg.sword_dir).expanduser()
    sources = {}
    for lang in langs:
        if lang not in task_cfg.modules:
            raise ValueError(f"task.modules has no SWORD module for language '{lang}'; has: {sorted(task_cfg.modules)}")
        module = task_cfg.modules[lang]
        sources[lang] = shipped_path(module) or sword_dir / module
        if sources[lang].is_file():
            continue
        if not sword_dir.is_dir():
            raise FileNotFoundError(f"task.sword_dir={sword_dir} does not exist (module {module}): {INSTALL_HINT}")
        if not (sources[lang] / "ot.bzv").exists() and not (sources[lang] / "nt.bzv").exists():
            raise FileNotFoundError(f"SWORD module {module} not found in {sword_dir}: {INSTALL_HINT}")
    return sources


def _fingerprint(lang: str, source: Path) -> dict:
    """What a source's extracted text depends on: a shipped file's content hash, a module's files' size and mtime."""
    if source.is_file():
        return {f"{lang}/{source.name}": hashlib.sha256(source.read_bytes()).hexdigest()}
    return {f"{lang}/{f.name}": [f.stat().st_size, f.stat().st_mtime_ns] for f in sorted(source.glob("*.bz[svz]"))}


def cache_key(sources: dict[str, Path], max_length_ratio: float) -> str:
    """Short hash of everything the extracted files depend on: sources, languages, settings."""
    files = {key: value for lang, source in sources.items() for key, value in _fingerprint(lang, source).items()}
    recipe = {"files": files, "langs": list(sources), "ratio": max_length_ratio, "split_version": SPLIT_VERSION}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def verse_rows(sources: dict[str, Path], max_length_ratio: float) -> tuple[list[tuple], dict]:
    """(ref, text per language...) rows that pass the filters, and what was dropped."""
    modules = {lang: read_shipped(s) if s.is_file() else read_module(s) for lang, s in sources.items()}
    if len(modules) == 1:
        (verses,) = modules.values()
        rows = [(ref, text) for ref, text in verses if text]
        return rows, {"verses": len(verses), "dropped_empty": len(verses) - len(rows)}
    src, tgt = modules.values()
    return align(src, tgt, max_length_ratio)


def _split(rows: list[tuple]) -> tuple[dict[str, list[tuple[str, ...]]], int]:
    """Rows (ref, texts...) by split, train minus exact copies of held-out rows, and how many copies were removed."""
    splits: dict[str, list[tuple[str, ...]]] = {name: [] for name in SPLITS}
    for ref, *texts in rows:
        splits[split_of(ref)].append(tuple(texts))
    held_out = set(splits["valid"]) | set(splits["test"])
    train = [texts for texts in splits["train"] if texts not in held_out]
    removed = len(splits["train"]) - len(train)
    splits["train"] = train
    return splits, removed


def _write(directory: Path, splits: dict[str, list[tuple[str, ...]]], langs: list[str], stats: dict) -> None:
    for name, rows in splits.items():
        for i, lang in enumerate(langs):
            (directory / f"{name}.{lang}").write_text("".join(row[i] + "\n" for row in rows), encoding="utf-8")
    (directory / "stats.json").write_text(json.dumps(stats, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def extract_bible(task_cfg) -> Path:
    """Directory holding {train,valid,test}.{lang} and stats.json for the task's languages; built on first use.

    The directory name is a hash of its inputs, and it appears only complete (written under a temporary name, then
    renamed), so concurrent jobs can call this safely: a loser of the race discards its copy and uses the winner's.
    """
    sources = module_sources(task_cfg)
    root = Path(task_cfg.cache_dir).expanduser() / "bible"
    final = root / cache_key(sources, task_cfg.max_length_ratio)
    if final.is_dir():
        return final

    rows, stats = verse_rows(sources, task_cfg.max_length_ratio)
    splits, removed = _split(rows)
    langs = list(sources)
    stats = {
        "modules": {lang: task_cfg.modules[lang] for lang in langs},
        "sources": {lang: str(source) for lang, source in sources.items()},
        **stats,
        "removed_from_train_as_held_out_copies": removed,
        "split_rule": f"chapter index % {HELD_OUT_EVERY}: {TEST_REMAINDER} test, {VALID_REMAINDER} valid",
        "split_version": SPLIT_VERSION,
        "sizes": {name: len(rows) for name, rows in splits.items()},
    }
    root.mkdir(parents=True, exist_ok=True)
    write_dir_atomic(final, lambda tmp: _write(tmp, splits, langs, stats))
    labels = {"dropped_empty": "empty", "dropped_out_of_step": "out of step", "dropped_misaligned": "misaligned"}
    labels["dropped_misaligned"] += f" (length ratio > {task_cfg.max_length_ratio:g})"
    dropped = ", ".join(f"{stats[key]} {label}" for key, label in labels.items() if key in stats)
    sizes = "/".join(str(n) for n in stats["sizes"].values())
    names = " -> ".join(stats["modules"].values())
    log.info(f"bible {names}: {stats['verses']} verses, dropped {dropped}; train/valid/test {sizes} in {final}")
    return final
