"""The data a run needs, from one call: `load_task(cfg.task)` -> vocabulary + train/valid/test splits.

Both corpora end up as plain-text files `{split}.{lang}` (the Bible is extracted to a cache first) and are prepared
once into a memory-mapped dataset under the cache (data/preparation.py, format in data/prepared.py), sharing one
subword vocabulary trained on a sample of the training split (jointly on both sides for translation). A job opens the
prepared dataset: training data stays on disk (memory-mapped), lengths in numpy arrays; valid/test keep their text.
"""

from __future__ import annotations  # Vocab and Split in annotations: imported when a task is loaded

import importlib
import logging
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from frozen_sweep.data.split import Split
    from frozen_sweep.data.vocab import Vocab

# the package's names, imported on first use: a sweep's plan imports frozen_sweep.data.hub and the preparation, and
# the batches' modules would import torch (seconds) with them
LAZY = {"Batch": "batching", "Group": "batching", "batch_indices": "batching", "pad_fraction": "batching",
        "LabelledSplit": "labelled", "Split": "split", "make_batches": "split", "plan": "split", "Vocab": "vocab"}
__all__ = sorted([*LAZY, "TaskData", "load_task"])

log = logging.getLogger(__name__)


def __getattr__(name: str):
    if name in LAZY:
        return getattr(importlib.import_module(f"{__name__}.{LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class TaskData:
    vocab: Vocab
    train: Split
    valid: Split
    test: Split
    stats: dict  # sizes, dropped counts, data dirs, vocabulary...: goes into the run's result record

    @property
    def num_classes(self) -> int | None:
        """A classification task's number of labels; None for the other kinds."""
        return len(self.stats["labels"]) if "labels" in self.stats else None

    @property
    def regression(self) -> bool:
        from frozen_sweep.data.labelled import NUMBER

        return self.stats.get("label_kind") == NUMBER

    @property
    def head_outputs(self) -> int | None:
        """What the model's head gives per example: a score per class, or one number (regression: 1, squeezed by the
        head to (B,)); None: no head."""
        return 1 if self.regression else self.num_classes

    @property
    def guess_loss(self) -> float:
        """The validation loss of a guess that knows nothing (the divergence guard's yardstick): uniform over the
        vocabulary or the classes (ln of their number), or a regression's 0 throughout, as an untrained head guesses
        (the mean squared valid number; inf, no yardstick, when that is 0)."""
        if self.regression:
            valid = self.stats["numbers"]["valid"]
            return valid["mean"] ** 2 + valid["std"] ** 2 or math.inf
        return math.log(self.num_classes or len(self.vocab))


def load_task(task_cfg) -> TaskData:
    """Prepare the task's data unless it is prepared, open it; drop over-long TRAIN examples only (task.max_len)."""
    from frozen_sweep.data.labelled import is_labelled, label_stats
    from frozen_sweep.data.preparation import prepare
    from frozen_sweep.data.prepared import open_prepared
    from frozen_sweep.data.vocab import prepared_vocab_file

    start = time.perf_counter()
    prepared = open_prepared(prepare(task_cfg))
    manifest, vocab = prepared.manifest, prepared.vocab
    train, dropped_long = prepared.splits["train"].at_most(task_cfg.max_len)
    if not len(train):
        raise ValueError(f"no training example has at most task.max_len={task_cfg.max_len} subwords on each side (all "
                         f"{dropped_long} are longer); raise task.max_len")  # fmt: skip
    splits = {**prepared.splits, "train": train}
    stats = {
        "data_dir": manifest["source_dir"],
        "prepared_dir": str(prepared.directory),
        "langs": manifest["langs"],
        "vocab_path": str(prepared_vocab_file(prepared.directory)),
        "vocab_size": len(vocab),
        "pad_id": vocab.specials.pad,
        "vocab_size_asked": task_cfg.vocab_size,
        "vocab_sampled": manifest["vocab_sampled"],
        "train_skipped_empty": manifest["splits"]["train"]["skipped_empty"],
        "train_dropped_long": dropped_long,
        "sizes": {name: len(split) for name, split in splits.items()},
        "load_s": round(time.perf_counter() - start, 2),
    }
    if is_labelled(manifest):  # classify: labels, class balance, majority class; regression: mean, spread, floor
        stats.update(label_stats(manifest), header=manifest.get("header"))
    if "corpus" in manifest:  # the Bible: what extraction read, dropped and split
        stats["corpus"] = manifest["corpus"]
    if len(vocab) < task_cfg.vocab_size and not task_cfg.vocab:
        log.warning("vocabulary of %d pieces, fewer than task.vocab_size=%d asked: the training text supports no more "
                    "(record: data.vocab_size, data.vocab_size_asked)", len(vocab), task_cfg.vocab_size)  # fmt: skip
    log.info(
        "data: %s, vocab %d, train/valid/test %d/%d/%d (dropped %d train examples > %d subwords) in %.1fs",
        prepared.directory,
        len(vocab),
        *stats["sizes"].values(),
        dropped_long,
        task_cfg.max_len,
        stats["load_s"],
    )
    return TaskData(vocab, splits["train"], splits["valid"], splits["test"], stats)
