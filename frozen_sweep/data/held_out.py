"""Valid held out of train (`task.valid_from_train=N`): N examples of train chosen by a fixed seed, the same choice for
a hub dataset's train split (data/hub_splits.py), a GLUE folder's train.tsv (read as the hub's) and a classification
TSV's train.tsv without a valid.tsv (task=text_files), so that one train set gives one held-out set from any of them."""

from pathlib import Path
from typing import Iterator

import numpy as np

from frozen_sweep.data.identity import HOLD_OUT_SEED
from frozen_sweep.data.tsv import Chunk, TsvReader
from frozen_sweep.data.tsv_columns import tsv_path


def held_out(n: int, held: int) -> np.ndarray:
    """(n,) bool: which of n training examples are held out as valid, `held` of them, by the fixed seed."""
    chosen = np.zeros(n, dtype=bool)
    chosen[np.random.Generator(np.random.PCG64(HOLD_OUT_SEED)).choice(n, held, replace=False)] = True
    return chosen


def examples_in(path: Path, header: bool) -> int:
    """The examples of a TSV file as data/tsv.py reads them: its lines (a last one without a newline too), less the
    header line; counted on bytes, without decoding."""
    lines, last = 0, b"\n"
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            lines, last = lines + block.count(b"\n"), block[-1:]
    return lines + (last != b"\n") - header


def held_out_tsv(directory: Path, header: bool, keys: dict[str, str], held: int) -> dict:
    """The readers of train.tsv less `held` examples, of those examples as valid, and of test.tsv."""
    path = tsv_path(directory, "train")
    n = examples_in(path, header)
    if held >= n:
        raise ValueError(f"task.valid_from_train={held}: {path} has {n} examples")
    chosen = held_out(n, held)
    train = TsvReader(directory, "train", header, keys)  # its first example sets the layout the others follow
    valid = TsvReader(directory, "train", header, keys, follows=train)
    return {"train": HeldOut(train, chosen, False), "valid": HeldOut(valid, chosen, True),
            "test": TsvReader(directory, "test", header, keys, follows=train)}  # fmt: skip


class HeldOut:
    """The examples of a train.tsv reader that the hold-out keeps in train (`valid` False) or holds out, with the
    reader's interface (data/tsv.py): `row` and `line` name the lines of train.tsv; after a full pass `lines` counts
    this role's examples."""

    def __init__(self, reader: TsvReader, chosen: np.ndarray, valid: bool):
        self.reader, self.chosen, self.valid = reader, chosen, valid
        self.path, self.header = reader.path, reader.header
        self.lines, self.mine = 0, np.zeros(0, dtype=np.int64)  # (examples of the chunk kept,) their indices in it

    @property
    def pairs(self) -> bool:
        return self.reader.pairs

    @property
    def first_label(self):
        """The file's first label, if this role has its first example (train.tsv's header detection)."""
        return self.reader.first_label if self.chosen[0] == self.valid else None

    def line(self, index: int) -> int:
        return self.reader.line(int(self.mine[index]))

    def row(self, index: int) -> str:
        return self.reader.row(int(self.mine[index]))

    def chunks(self) -> Iterator[Chunk]:
        self.lines, seen = 0, 0
        for text_a, text_b, labels in self.reader.chunks():
            self.mine = np.flatnonzero(self.chosen[seen : seen + len(labels)] == self.valid)
            pick = [text_a, text_b, labels]
            yield tuple(None if column is None else [column[i] for i in self.mine] for column in pick)
            seen, self.lines = seen + len(labels), self.lines + len(self.mine)
        if seen != len(self.chosen):
            raise ValueError(f"{self.path} changed while it was read ({len(self.chosen)} examples, then {seen})")
