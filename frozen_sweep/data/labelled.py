"""A classification split: one token side per example (its text, or text_a eos eos text_b) and a label id each, and
the class balance a record reports beside every result (the majority-class accuracy is the floor a classifier must
beat)."""

import numpy as np
import torch

from frozen_sweep.data.batching import Batch
from frozen_sweep.data.split import Side, Split
from frozen_sweep.data.vocab import BOS, EOS, PAD


class LabelledSplit(Split):
    """`labels` (N,) int32 over the side's rows. An example is read as `bos text eos` (fairseq's sentence_prediction
    with --init-token bos), so its length for batching counts both: `tgt_lens` is the side's length + 1 (batching adds
    the other one)."""

    def __init__(self, side: Side, labels: np.ndarray, text: list[str] | None = None, rows: np.ndarray | None = None):
        super().__init__(None, side, None, text, rows)
        self.labels = labels
        self.tgt_lens = self.tgt_lens + 1

    def at_most(self, max_len: int) -> tuple["LabelledSplit", int]:
        """The examples of at most max_len subwords (bos or eos counted once), and how many were dropped."""
        long = self.tgt_lens > max_len
        dropped = int(long.sum())
        if not dropped:
            return self, 0
        kept = np.flatnonzero(~long)
        rows = kept if self.rows is None else self.rows[kept]
        text = None if self.tgt_text is None else [self.tgt_text[i] for i in kept]
        return LabelledSplit(self.tgt, self.labels, text, rows), dropped

    def label_ids(self, indices) -> np.ndarray:
        return self.labels[self._row(indices)]

    def collate(self, indices, length: int | None = None) -> Batch:
        """`tgt_in` (B, L): bos, the text, eos, padding; `tgt_out` (B,): the label ids; n_tokens: the examples."""
        rows = self._row(indices)
        width = length or int(self.tgt.lens[rows].max()) + 2
        tokens, lens = self.tgt.padded(rows, width - 1)  # (B, L - 1)
        inputs = np.full((len(rows), width), PAD, dtype=np.int64)  # (B, L)
        inputs[:, 0], inputs[:, 1:] = BOS, tokens
        inputs[np.arange(len(rows)), lens + 1] = EOS
        labels = torch.from_numpy(self.labels[rows].astype(np.int64))  # (B,)
        return Batch(None, torch.from_numpy(inputs), labels, len(rows), np.asarray(indices))


def label_stats(manifest: dict) -> dict:
    """The record's view of the labels: their names (in id order), each split's counts, whether examples are pairs,
    <unk> pieces per split, and the majority class of train with the accuracy it scores on valid and test."""
    names = manifest["labels"]
    counts = {split: manifest["splits"][split]["labels"] for split in manifest["splits"]}
    majority = max(names, key=lambda label: counts["train"][label])
    accuracy = {split: counts[split][majority] / max(sum(counts[split].values()), 1) for split in ("valid", "test")}
    return {
        "labels": names,
        "pairs": manifest["pairs"],
        "label_counts": counts,
        "majority": {"label": majority, **accuracy},
        "unk_rate": {split: c["unk"] / max(c["tokens"]["text"], 1) for split, c in manifest["splits"].items()},
    }
