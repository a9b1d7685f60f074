"""Length-bucketed batches under a token budget, in a small set of (batch, length) shapes, planned on numpy arrays.

An example's length is the longer of its source and target (each including its eos or bos), rounded up to a multiple
of `multiple`: its bucket. Both sides of a batch are padded to the bucket's length, and a bucket fills batches of
max_tokens // length examples; its remainder joins the next bucket. So an epoch has about one shape per bucket:
kernels that plan per shape (cuDNN attention, oneDNN bf16) plan a few dozen times, not hundreds.

Planning holds no per-sentence Python object: a permutation, a stable (radix) sort by bucket and slices of the sorted
order, O(n) time and a few bytes per example. Order within a bucket and batch order come from numpy's PCG64 seeded by
a hash of (seed, epoch): the same seed and epoch give the same batches, on any machine.
"""

from __future__ import annotations  # torch.Tensor in annotations: torch is imported where tensors are made

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import torch

from frozen_sweep.data.specials import PAD


@dataclass
class Batch:
    src: torch.Tensor | None  # (B, L) source tokens + eos, padded; None for language modelling
    tgt_in: torch.Tensor  # (B, L) bos + target tokens: decoder input
    tgt_out: torch.Tensor  # (B, L) target tokens + eos: what the decoder predicts
    n_tokens: int  # non-pad target tokens, to normalise the loss
    indices: np.ndarray  # (B,) example indices, to put decoded output back in corpus order

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
    indices: np.ndarray  # (B,) example indices of the batch


def batch_rng(seed: int, epoch: int) -> np.random.Generator:
    """PCG64 seeded from sha256("batches/{seed}/{epoch}"): stable across runs, numpy versions' seeding and machines."""
    digest = hashlib.sha256(f"batches/{seed}/{epoch}".encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "little")))


def round_up(n, multiple: int):
    return -(-n // multiple) * multiple


def bucket_lengths(src_lens: np.ndarray | None, tgt_lens: np.ndarray, multiple: int) -> np.ndarray:
    """(n,) padded length of each example: max(src, tgt) + eos/bos, rounded up to `multiple`; uint16 when it fits, so
    that numpy's stable argsort is a radix sort."""
    longest = np.asarray(tgt_lens) if src_lens is None else np.maximum(src_lens, tgt_lens)
    length = round_up(longest.astype(np.int64) + 1, multiple)
    return length.astype(np.uint16 if len(length) == 0 or length.max() < 2**16 else np.uint32)


def batch_indices(
    src_lens: np.ndarray | None,
    tgt_lens: np.ndarray,
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
    length = bucket_lengths(src_lens, tgt_lens, multiple)
    rng = batch_rng(seed, epoch)
    if shuffle:
        order = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
        rng.shuffle(order)  # random order within a bucket once the stable sort below has run
        order = order[np.argsort(length[order], kind="stable")]
    else:
        src = np.zeros(n, np.int64) if src_lens is None else np.asarray(src_lens)
        order = np.lexsort((src, tgt_lens, length))  # by length, then target, then source length
    sorted_length = length[order]
    starts = np.flatnonzero(np.r_[True, sorted_length[1:] != sorted_length[:-1]]) if n else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], n]

    groups: list[Group] = []
    carried_from, carried_length = None, 0  # the previous bucket's remainder: order[carried_from:start]
    for start, end in zip(starts.tolist(), ends.tolist()):
        bucket_length = int(sorted_length[start])
        if carried_from is not None and bucket_length > carried_length + multiple:
            groups.append(Group(carried_length, order[carried_from:start]))
            carried_from = None
        first = start if carried_from is None else carried_from
        size = max(1, max_tokens // bucket_length)  # an example longer than max_tokens on its own still gets a batch
        full = first + (end - first) // size * size
        groups += [Group(bucket_length, order[k : k + size]) for k in range(first, full, size)]
        carried_from, carried_length = (full, bucket_length) if full < end else (None, 0)
    if carried_from is not None:
        groups.append(Group(carried_length, order[carried_from:]))
    if shuffle:
        groups = [groups[i] for i in rng.permutation(len(groups))]
    return groups


def pad_sequences(rows: list[list[int]], pad: int, length: int | None = None) -> torch.Tensor:
    """(len(rows), length or the longest row) int64 tensor of the rows, right-padded with `pad` (decoding's
    sources)."""
    import torch  # torch: imported by the batches, not by a sweep's plan (which prepares data)

    out = torch.full((len(rows), length or max(map(len, rows))), pad, dtype=torch.long)
    for r, row in enumerate(rows):
        out[r, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out


def pad_fraction(batches: list[Batch]) -> float:
    """Pad tokens / all tokens over the source and target-output tensors of the batches."""
    pads = total = 0
    for batch in batches:
        for t in (batch.src, batch.tgt_out):
            if t is not None:
                pads += int((t == PAD).sum())
                total += t.numel()
    return pads / total if total else 0.0
