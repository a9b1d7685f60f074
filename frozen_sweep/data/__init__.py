"""The data a run needs, from one call: `load_task(cfg.task)` -> vocabulary + encoded train/valid/test splits.

Both corpora end up as plain-text files `{split}.{lang}` (the Bible is extracted to a cache first), are read by the
same reader, and share one subword vocabulary trained on the training split (jointly on both sides for translation).
"""

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from frozen_sweep.config import CorpusKind, TaskKind
from frozen_sweep.data.batching import Batch, batch_indices, collate, pad_fraction
from frozen_sweep.data.bible import extract_bible
from frozen_sweep.data.text_files import read_split
from frozen_sweep.data.vocab import Vocab, train_or_load_vocab

__all__ = ["Batch", "Split", "TaskData", "Vocab", "batch_indices", "collate", "load_task", "pad_fraction"]

log = logging.getLogger(__name__)


@dataclass
class Split:
    src: list[list[int]] | None  # subword ids, no bos/eos; None for LM
    tgt: list[list[int]]
    src_text: list[str] | None  # raw sentences (for reference/decoding logs)
    tgt_text: list[str]  # raw reference sentences (BLEU is computed against these)

    def __len__(self) -> int:
        return len(self.tgt)


@dataclass
class TaskData:
    vocab: Vocab
    train: Split
    valid: Split
    test: Split
    stats: dict  # sizes, dropped counts, data dir, vocab path...: goes into the run's result record


def data_dir(task_cfg) -> Path:
    """The directory holding {train,valid,test}.{lang} for this task."""
    if CorpusKind(task_cfg.corpus) == CorpusKind.bible:
        return extract_bible(task_cfg)
    return Path(task_cfg.path).expanduser()


def _drop_long(split: Split, max_len: int) -> tuple[Split, int]:
    """Training examples with at most max_len subwords on each side, and how many were dropped."""
    sides = [split.tgt] if split.src is None else [split.src, split.tgt]
    keep = [i for i in range(len(split)) if all(len(side[i]) <= max_len for side in sides)]

    def pick(items):
        return None if items is None else [items[i] for i in keep]

    return Split(pick(split.src), pick(split.tgt), pick(split.src_text), pick(split.tgt_text)), len(split) - len(keep)


def load_task(task_cfg) -> TaskData:
    """Resolve the corpus, train or load the vocabulary, encode every split; drop over-long TRAIN examples only."""
    start = time.perf_counter()
    monolingual = TaskKind(task_cfg.kind).monolingual
    langs = [task_cfg.tgt_lang] if monolingual else [task_cfg.src_lang, task_cfg.tgt_lang]
    directory = data_dir(task_cfg)
    texts = {name: read_split(directory, name, langs) for name in ("train", "valid", "test")}

    train_text = [line for column in texts["train"].lines for line in column]
    vocab = train_or_load_vocab(train_text, task_cfg.vocab_size, Path(task_cfg.cache_dir).expanduser())

    splits = {}
    for name, text in texts.items():
        *src_text, tgt_text = text.lines
        src_text = src_text[0] if src_text else None
        src = None if src_text is None else vocab.encode_batch(src_text)
        splits[name] = Split(src, vocab.encode_batch(tgt_text), src_text, tgt_text)
    splits["train"], dropped_long = _drop_long(splits["train"], task_cfg.max_len)

    stats = {
        "data_dir": str(directory),
        "langs": langs,
        "vocab_path": str(vocab.path),
        "vocab_size": len(vocab),
        "train_skipped_empty": texts["train"].skipped_empty,
        "train_dropped_long": dropped_long,
        "sizes": {name: len(split) for name, split in splits.items()},
        "load_s": round(time.perf_counter() - start, 2),
    }
    if CorpusKind(task_cfg.corpus) == CorpusKind.bible:  # what extraction read, dropped and split
        stats["corpus"] = json.loads((directory / "stats.json").read_text(encoding="utf-8"))
    log.info(
        "data: %s, vocab %d, train/valid/test %d/%d/%d (dropped %d train examples > %d subwords) in %.1fs",
        directory,
        len(vocab),
        *stats["sizes"].values(),
        dropped_long,
        task_cfg.max_len,
        stats["load_s"],
    )
    return TaskData(vocab, splits["train"], splits["valid"], splits["test"], stats)
