"""A classification or regression split: one token side per example (its text, or text_a eos eos text_b) and a
label id or a number each, and what a record reports beside every result: the class balance (the majority-class
accuracy is the floor a classifier must beat), or the numbers' mean and spread (the mean predictor's squared error is
a regression's floor). Label values are read here: a regression's as numbers, a classifier's that look like numbers
refused."""

import math

import numpy as np

from frozen_sweep.data.batching import Batch
from frozen_sweep.data.specials import OURS, Specials
from frozen_sweep.data.split import Side, Split

NUMBER = "number"  # a prepared regression dataset's manifest: "label_kind": "number"
MOST_NUMERIC_CLASSES = 20  # more distinct labels than this, all numbers: refused as classes (check_classes)


class LabelledSplit(Split):
    """`labels` (N,) over the side's rows: int32 label ids, or a regression's float32 numbers. An example is read as
    prefix, text, suffix (ours: `bos text eos`, fairseq's sentence_prediction with --init-token bos; BERT's
    `[CLS] text [SEP]`), so its length for batching counts them: `tgt_lens` is the side's length + both, less one
    (batching adds one)."""

    def __init__(self, side: Side, labels: np.ndarray, text: list[str] | None = None, rows: np.ndarray | None = None,
                 specials: Specials = OURS):  # fmt: skip
        super().__init__(None, side, None, text, rows, specials)
        self.labels = labels
        self.tgt_lens = self.tgt_lens + len(specials.prefix) + len(specials.suffix) - 1

    def at_most(self, max_len: int) -> tuple["LabelledSplit", int]:
        """The examples of at most max_len subwords (bos or eos counted once), and how many were dropped."""
        long = self.tgt_lens > max_len
        dropped = int(long.sum())
        if not dropped:
            return self, 0
        kept = np.flatnonzero(~long)
        rows = kept if self.rows is None else self.rows[kept]
        text = None if self.tgt_text is None else [self.tgt_text[i] for i in kept]
        return LabelledSplit(self.tgt, self.labels, text, rows, self.specials), dropped

    def label_ids(self, indices) -> np.ndarray:
        return self.labels[self._row(indices)]

    def collate(self, indices, length: int | None = None) -> Batch:
        """`tgt_in` (B, L): the prefix, the text, the suffix, padding; `tgt_out` (B,): the label ids (int64) or
        numbers (float32); n_tokens: the examples."""
        rows, specials = self._row(indices), self.specials
        prefix, suffix = np.array(specials.prefix, np.int64), np.array(specials.suffix, np.int64)
        width = max(length or 0, int(self.tgt.lens[rows].max()) + len(prefix) + len(suffix))
        tokens, lens = self.tgt.padded(rows, width - len(prefix), specials.pad)  # (B, L - prefix)
        inputs = np.concatenate([np.tile(prefix, (len(rows), 1)), tokens], 1)  # (B, L)
        ends = (lens + len(prefix))[:, None] + np.arange(len(suffix))  # (B, suffix) where the suffix goes
        inputs[np.arange(len(rows))[:, None], ends] = suffix
        labels = self.labels[rows]
        import torch  # torch: imported by the batches, not by a sweep's plan (which prepares data)

        labels = torch.from_numpy(labels.astype(np.float32 if labels.dtype.kind == "f" else np.int64))  # (B,)
        return Batch(None, torch.from_numpy(inputs), labels, len(rows), np.asarray(indices))


def unk_rates(manifest: dict) -> dict[str, float]:
    """The share of <unk> pieces in each split of a prepared labelled dataset (other kinds' manifests count none)."""
    return {split: c["unk"] / max(c["tokens"]["text"], 1) for split, c in manifest["splits"].items() if "unk" in c}


def label_stats(manifest: dict) -> dict:
    """The record's view of the targets: whether examples are pairs, <unk> pieces per split, and a classifier's label
    names (in id order), counts per split and train's majority class with the accuracy it scores on valid and test;
    a regression's count, mean and standard deviation per split and the squared error on valid and test of always
    predicting train's mean (`mean_predictor`)."""
    common = {"pairs": manifest["pairs"], "unk_rate": unk_rates(manifest)}
    if manifest.get("label_kind") == NUMBER:
        numbers = {split: manifest["splits"][split]["numbers"] for split in manifest["splits"]}
        mean = numbers["train"]["mean"]
        # the squared error of predicting `mean` throughout: the split's variance plus its mean's distance from `mean`²
        floor = {s: numbers[s]["std"] ** 2 + (numbers[s]["mean"] - mean) ** 2 for s in ("valid", "test")}
        return {"label_kind": NUMBER, "numbers": numbers, "mean_predictor": {"value": mean, **floor}, **common}
    names = manifest["labels"]
    counts = {split: manifest["splits"][split]["labels"] for split in manifest["splits"]}
    majority = max(names, key=lambda label: counts["train"][label])
    accuracy = {split: counts[split][majority] / max(sum(counts[split].values()), 1) for split in ("valid", "test")}
    return {"labels": names, "label_counts": counts, "majority": {"label": majority, **accuracy}, **common}


def is_labelled(manifest: dict) -> bool:
    """Whether a prepared dataset's examples carry a label id (classify) or a number (regression)."""
    return "labels" in manifest or manifest.get("label_kind") == NUMBER


def number_summary(values: np.ndarray) -> dict:
    """A split's numbers in the manifest: their count, mean and (population) standard deviation."""
    values = values.astype(np.float64)
    return {"count": len(values), "mean": float(values.mean()), "std": float(values.std())}


def parse_numbers(labels: list[str], row) -> list[float]:
    """A regression's labels as numbers; ValueError naming where the first that is not a finite number is: `row(i)`
    says where labels[i] is (a file and line, a dataset's row)."""
    values = []
    for number, label in enumerate(labels):
        try:
            value = float(label)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise ValueError(f"{row(number)}: label {label!r} is not a number (task.kind=regression reads a "
                             f"number per example)")  # fmt: skip
        values.append(value)
    return values


def check_classes(path, labels: set[str]) -> None:
    """ValueError unless a classifier's train labels make classes: two or more (one output would be a regression's
    head), and not many distinct numbers (STS-B's similarity scores are a regression's targets: the message says to
    use task.kind=regression, before hundreds of classes are built)."""
    if len(labels) < 2:
        raise ValueError(f"{path}: one label ({', '.join(labels)}): a classifier needs two or more")
    if len(labels) <= MOST_NUMERIC_CLASSES:
        return
    try:
        numbers = sorted(map(float, labels))
    except ValueError:
        return
    raise ValueError(
        f"{path}: {len(labels)} distinct labels, all numbers ({numbers[0]:g} … {numbers[-1]:g}): task.kind=classify "
        f"would learn each as a class of its own; to predict a number per example use task.kind=regression"
    )
