"""Length-bucketed batches under a token budget, in a small set of (batch, length) shapes, and their tensors.

An example's length is the longer of its source and target (each including its eos or bos), rounded up to a multiple
of `multiple`: its bucket. Both sides of a batch are padded to the bucket's length, and a bucket fills batches of
max_tokens // length examples; its remainder joins the next bucket. So an epoch has about one shape per bucket:
kernels that plan per shape (cuDNN attention, oneDNN bf16) plan a few dozen times, not hundreds
(docs/performance.md, "On a GPU").
Order within a bucket, and batch order, are shuffled with a generator seeded from (seed, epoch): the same seed and
epoch give the same batches, on any machine.
"""

import itertools
import random
from dataclasses import dataclass
from typing import NamedTuple

import torch

from frozen_sweep.data.vocab import BOS, EOS, PAD


@dataclass
class Batch:
    src: torch.Tensor | None  # (B, L) source tokens + eos, padded; None for language modelling
    tgt_in: torch.Tensor  # (B, L) bos + target tokens: decoder input
    tgt_out: torch.Tensor  # (B, L) target tokens + eos: what the decoder predicts
    n_tokens: int  # non-pad target tokens, to normalise the loss
    indices: list[int]  # example indices, to put decoded output back in corpus order

    def to(self, device) -> "Batch":
        """On `device`; copies from pinned memory run asynchronously (non_blocking)."""
        src = None if self.src is None else self.src.to(device, non_blocking=True)
        tgt_in, tgt_out = self.tgt_in.to(device, non_blocking=True), self.tgt_out.to(device, non_blocking=True)
        return Batch(src, tgt_in, tgt_out, self.n_tokens, self.indices)

    def pin_memory(self) -> "Batch":
        """In page-locked host memory, so that a copy to the GPU does not block the host."""
        src = None if self.src is None else self.src.pin_memory()
        return Batch(src, self.tgt_in.pin_memory(), self.tgt_out.pin_memory(), self.n_tokens, self.indices)


class Group(NamedTuple):
    length: int  # padded length of both sides, eos/bos included
    indices: list[int]


def _rng(seed: int, epoch: int) -> random.Random:
    return random.Random(f"batches/{seed}/{epoch}")  # str seeds hash with sha512: stable across runs and machines


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def batch_indices(
    src_lens: list[int] | None,
    tgt_lens: list[int],
    max_tokens: int,
    shuffle: bool,
    seed: int = 0,
    epoch: int = 0,
    multiple: int = 1,
) -> list[Group]:
    """Example indices grouped into batches of one padded length; lengths exclude bos/eos. Without shuffle: sorted by
    length, for evaluation. A bucket's remainder joins the next bucket when that one is adjacent (`multiple` longer);
    across a gap (the sparse long tail) it stays a smaller batch of its own."""
    n = len(tgt_lens)
    if src_lens is not None and len(src_lens) != n:
        raise ValueError(f"{len(src_lens)} source lengths but {n} target lengths")
    src_lens = src_lens if src_lens is not None else [0] * n
    length = [round_up(max(s, t) + 1, multiple) for s, t in zip(src_lens, tgt_lens)]  # + eos, + bos/eos
    rng = _rng(seed, epoch)
    order = list(range(n))
    if shuffle:
        rng.shuffle(order)  # random order within a bucket once the stable sort below has run
        order.sort(key=length.__getitem__)
    else:
        order.sort(key=lambda i: (length[i], tgt_lens[i], src_lens[i]))

    groups: list[Group] = []
    carried, carried_length = [], 0
    for bucket_length, members in itertools.groupby(order, key=length.__getitem__):
        if carried and bucket_length > carried_length + multiple:
            groups.append(Group(carried_length, carried))
            carried = []
        pending = carried + list(members)
        size = max(1, max_tokens // bucket_length)  # an example longer than max_tokens on its own still gets a batch
        full = len(pending) // size * size
        groups += [Group(bucket_length, pending[k : k + size]) for k in range(0, full, size)]
        carried, carried_length = pending[full:], bucket_length
    if carried:
        groups.append(Group(carried_length, carried))
    if shuffle:
        rng.shuffle(groups)
    return groups


def make_batches(
    src: list[list[int]] | None,
    tgt: list[list[int]],
    max_tokens: int,
    shuffle: bool,
    seed: int = 0,
    epoch: int = 0,
    multiple: int = 1,
) -> list[Batch]:
    """Token-id lists (no bos/eos; src None for LM) → the Batches of `batch_indices`, in its order."""
    groups = plan_batches(src, tgt, max_tokens, shuffle, seed, epoch, multiple)
    return [collate(src, tgt, group.indices, group.length) for group in groups]


def plan_batches(src, tgt, max_tokens: int, shuffle: bool, seed: int = 0, epoch: int = 0, multiple: int = 1):
    """The Groups of `batch_indices` for token-id lists: cheap, so that batches can be collated one at a time."""
    src_lens = None if src is None else [len(s) for s in src]
    return batch_indices(src_lens, [len(t) for t in tgt], max_tokens, shuffle, seed, epoch, multiple)


def pad_sequences(rows: list[list[int]], length: int | None = None) -> torch.Tensor:
    """(len(rows), length or the longest row) int64 tensor of the rows, right-padded with PAD."""
    out = torch.full((len(rows), length or max(map(len, rows))), PAD, dtype=torch.long)
    for r, row in enumerate(rows):
        out[r, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out


def collate(src: list[list[int]] | None, tgt: list[list[int]], indices: list[int], length: int | None = None) -> Batch:
    """The Batch of examples `indices` from token-id lists without bos/eos (src None for LM), both sides padded to
    `length` (a Group's), or each to its longest row."""
    src_t = None if src is None else pad_sequences([src[i] + [EOS] for i in indices], length)
    tgt_in = pad_sequences([[BOS] + tgt[i] for i in indices], length)
    tgt_out = pad_sequences([tgt[i] + [EOS] for i in indices], length)
    return Batch(src_t, tgt_in, tgt_out, int((tgt_out != PAD).sum()), list(indices))


def pad_fraction(batches: list[Batch]) -> float:
    """Pad tokens / all tokens over the source and target-output tensors of the batches."""
    pads = total = 0
    for batch in batches:
        for t in (batch.src, batch.tgt_out):
            if t is not None:
                pads += int((t == PAD).sum())
                total += t.numel()
    return pads / total if total else 0.0
