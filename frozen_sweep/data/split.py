"""A split of a task as the trainer uses it: token ids in flat arrays (a prepared dataset's read from its files a row
at a time: data/prepared.py's DiskArray), lengths in arrays, batches collated straight from them. No per-sentence
Python object is held for training data; valid and test also keep their text (BLEU is computed against it).
"""

from dataclasses import dataclass

import numpy as np

from frozen_sweep.data.batching import Batch, Group, batch_indices
from frozen_sweep.data.specials import OURS, PAD, Specials


@dataclass
class Side:
    """One language of a split: every sentence's subword ids (no bos/eos) concatenated, and where each starts."""

    ids: np.ndarray  # (T,) uint16 or uint32; a prepared dataset's: a DiskArray (data/prepared.py), never mapped
    offsets: np.ndarray  # (N + 1,) int64: sentence i is ids[offsets[i]:offsets[i + 1]]; a DiskArray too
    lens: np.ndarray  # (N,) int32 subword counts

    @classmethod
    def from_lists(cls, rows: list[list[int]]) -> "Side":
        lens = np.array([len(r) for r in rows], dtype=np.int32)
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        return cls(np.fromiter((t for r in rows for t in r), dtype=np.uint32, count=int(offsets[-1])), offsets, lens)

    def padded(self, rows: np.ndarray, width: int, pad: int = PAD) -> tuple[np.ndarray, np.ndarray]:
        """(B, width) int64 tokens of `rows`, left-aligned and `pad`-filled, and their (B,) lengths."""
        lens = self.lens[rows].astype(np.int64)
        column = np.arange(width)
        inside = column < lens[:, None]  # (B, width)
        if not isinstance(self.ids, np.ndarray):  # on disk (DiskArray): one read per row, of its ids alone
            tokens = np.full((len(rows), width), pad, np.int64)
            tokens[inside] = self.ids.ranges(self.offsets[rows], np.minimum(lens, width))  # row by row, in order
            return tokens, lens
        where = np.minimum(self.offsets[rows][:, None] + column, max(len(self.ids) - 1, 0))  # (B, width)
        tokens = np.where(inside, self.ids[where] if len(self.ids) else 0, pad).astype(np.int64)
        return tokens, lens


class Split:
    """`src` None for language modelling. `rows` (kept examples of the sides, e.g. after dropping over-long ones) is
    None when every example is kept; example i of the split is row rows[i] of the sides. `specials`: the
    vocabulary's (data/specials.py), which the batches are framed and padded with."""

    def __init__(self, src: Side | None, tgt: Side, src_text=None, tgt_text=None, rows: np.ndarray | None = None,
                 specials: Specials = OURS):  # fmt: skip
        self.src, self.tgt, self.rows, self.specials = src, tgt, rows, specials
        self.src_text: list[str] | None = src_text  # valid/test: the sentences; None for training data and LM
        self.tgt_text: list[str] | None = tgt_text  # valid/test: the references
        self.tgt_lens = tgt.lens if rows is None else tgt.lens[rows]  # (N,) subwords, no bos/eos
        self.src_lens = None if src is None else src.lens if rows is None else src.lens[rows]

    @classmethod
    def from_ids(cls, src: list[list[int]] | None, tgt: list[list[int]], src_text=None, tgt_text=None,
                 specials: Specials = OURS) -> "Split":  # fmt: skip
        """A split held in memory, from token-id lists (scoring, tests, benchmarks)."""
        src_side = None if src is None else Side.from_lists(src)
        return cls(src_side, Side.from_lists(tgt), src_text, tgt_text, specials=specials)

    def __len__(self) -> int:
        return len(self.tgt_lens)

    def _row(self, indices) -> np.ndarray:
        indices = np.asarray(indices, dtype=np.int64)
        return indices if self.rows is None else self.rows[indices]

    def src_ids(self, i: int) -> list[int]:
        """Source subword ids of example i (no eos): what decoding reads."""
        (row,) = self._row([i])
        start, end = self.src.offsets[row : row + 2].tolist()
        return self.src.ids[start:end].tolist()

    def sources(self, n: int | None = None) -> list[list[int]]:
        """Source ids of the first n examples (all: None), as decoding takes them: held-out sets only (small)."""
        return [self.src_ids(i) for i in range(len(self) if n is None else min(n, len(self)))]

    def tgt_ids(self, i: int) -> list[int]:
        (row,) = self._row([i])
        start, end = self.tgt.offsets[row : row + 2].tolist()
        return self.tgt.ids[start:end].tolist()

    def head(self, n: int | None) -> "Split":
        """The first n examples (all: None)."""
        if n is None or n >= len(self):
            return self
        kept = np.arange(n)
        return Split(self.src, self.tgt, _pick(self.src_text, kept), _pick(self.tgt_text, kept), self._row(kept),
                     self.specials)  # fmt: skip

    def at_most(self, max_len: int) -> tuple["Split", int]:
        """The examples with at most max_len subwords on each side, and how many were dropped."""
        long = self.tgt_lens > max_len
        if self.src_lens is not None:
            long |= self.src_lens > max_len
        dropped = int(long.sum())
        if not dropped:
            return self, 0
        kept = np.flatnonzero(~long)
        rows = kept if self.rows is None else self.rows[kept]
        texts = _pick(self.src_text, kept), _pick(self.tgt_text, kept)
        return Split(self.src, self.tgt, *texts, rows, self.specials), dropped

    def collate(self, indices, length: int | None = None) -> Batch:
        """The Batch of examples `indices`, both sides padded to `length` (a Group's), or each to its longest + 1.
        A target row is prefix + target + eos (ours: bos target eos; GPT-NeoX's: target eos): `tgt_in` all of it but
        the last, `tgt_out` all but the first."""
        import torch  # torch: imported by the batches, not by a sweep's plan (which prepares data)

        rows, specials = self._row(indices), self.specials
        src = None
        if self.src is not None:
            src_width = length or int(self.src.lens[rows].max()) + 1
            tokens, lens = self.src.padded(rows, src_width, specials.pad)
            tokens[np.arange(len(rows)), lens] = specials.eos  # (B, L) source + eos
            src = torch.from_numpy(tokens)
        prefix = len(specials.prefix)
        width = max(length or 0, int(self.tgt.lens[rows].max()) + prefix)  # one more than the longest row's targets
        tokens, lens = self.tgt.padded(rows, width + 1 - prefix, specials.pad)  # (B, L + 1 - prefix)
        row = np.concatenate([np.tile(np.array(specials.prefix, np.int64), (len(rows), 1)), tokens], 1)  # (B, L + 1)
        tgt_in = row[:, :-1].copy()  # the eos is never read: what follows it is padding
        row[np.arange(len(rows)), lens + prefix] = specials.eos  # prefix + target + eos
        n_tokens = int(lens.sum()) + len(rows) * prefix  # targets: the row but its first token
        return Batch(src, torch.from_numpy(tgt_in), torch.from_numpy(row[:, 1:].copy()), n_tokens, np.asarray(indices))


def _pick(texts: list[str] | None, kept: np.ndarray) -> list[str] | None:
    return None if texts is None else [texts[i] for i in kept]


def plan(split: Split, max_tokens: int, shuffle: bool, seed: int = 0, epoch: int = 0, multiple: int = 1) -> list[Group]:
    """The batches of `split` as Groups (cheap: collate them one at a time)."""
    return batch_indices(split.src_lens, split.tgt_lens, max_tokens, shuffle, seed, epoch, multiple)


def make_batches(split: Split, max_tokens: int, shuffle: bool, seed: int = 0, epoch: int = 0, multiple: int = 1):
    """Every Batch of `split`, in plan order (validation and test sets: small)."""
    return [split.collate(g.indices, g.length) for g in plan(split, max_tokens, shuffle, seed, epoch, multiple)]
