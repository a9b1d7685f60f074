"""Length-bucketed batches under a token budget, and their tensors.

Examples of similar length are batched together so little compute goes to padding; a batch holds as many sentences
as fit in `max_tokens` counted as n_sentences * padded length (the longer of source and target, each including its
eos or bos). Batch order, and the order among equal-length examples, is shuffled with a generator seeded from
(seed, epoch): the same seed and epoch give the same batches, on any machine.
"""

import random
from dataclasses import dataclass

import torch

from frozen_sweep.data.vocab import BOS, EOS, PAD


@dataclass
class Batch:
    src: torch.Tensor | None  # (B, S) source tokens + eos, padded; None for language modelling
    tgt_in: torch.Tensor  # (B, T) bos + target tokens: decoder input
    tgt_out: torch.Tensor  # (B, T) target tokens + eos: what the decoder predicts
    n_tokens: int  # non-pad target tokens, to normalise the loss
    indices: list[int]  # example indices, to put decoded output back in corpus order

    def to(self, device) -> "Batch":
        src = None if self.src is None else self.src.to(device, non_blocking=True)
        tgt_in, tgt_out = self.tgt_in.to(device, non_blocking=True), self.tgt_out.to(device, non_blocking=True)
        return Batch(src, tgt_in, tgt_out, self.n_tokens, self.indices)


def _rng(seed: int, epoch: int) -> random.Random:
    return random.Random(f"batches/{seed}/{epoch}")  # str seeds hash with sha512: stable across runs and machines


def batch_indices(
    src_lens: list[int] | None, tgt_lens: list[int], max_tokens: int, shuffle: bool, seed: int = 0, epoch: int = 0
) -> list[list[int]]:
    """Example indices grouped into batches; lengths exclude bos/eos. Without shuffle: sorted, for evaluation."""
    n = len(tgt_lens)
    if src_lens is not None and len(src_lens) != n:
        raise ValueError(f"{len(src_lens)} source lengths but {n} target lengths")
    src_lens = src_lens if src_lens is not None else [0] * n
    rng = _rng(seed, epoch)
    order = list(range(n))
    if shuffle:
        rng.shuffle(order)  # random order among equal lengths once the stable sort below has run
    order.sort(key=lambda i: (tgt_lens[i], src_lens[i]))

    batches: list[list[int]] = []
    batch: list[int] = []
    longest = 0
    for i in order:
        length = max(src_lens[i], tgt_lens[i]) + 1  # + eos on the source, + bos/eos on the target
        if batch and (len(batch) + 1) * max(longest, length) > max_tokens:
            batches.append(batch)
            batch, longest = [], 0
        batch.append(i)  # an example longer than max_tokens on its own still gets a batch
        longest = max(longest, length)
    if batch:
        batches.append(batch)
    if shuffle:
        rng.shuffle(batches)
    return batches


def make_batches(
    src: list[list[int]] | None, tgt: list[list[int]], max_tokens: int, shuffle: bool, seed: int = 0, epoch: int = 0
) -> list[Batch]:
    """Token-id lists (no bos/eos; src None for LM) → the Batches of `batch_indices`, in its order."""
    src_lens = None if src is None else [len(s) for s in src]
    groups = batch_indices(src_lens, [len(t) for t in tgt], max_tokens, shuffle, seed, epoch)
    return [collate(src, tgt, group) for group in groups]


def pad_sequences(rows: list[list[int]]) -> torch.Tensor:
    """(len(rows), longest) int64 tensor of the rows, right-padded with PAD."""
    out = torch.full((len(rows), max(map(len, rows))), PAD, dtype=torch.long)
    for r, row in enumerate(rows):
        out[r, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out


def collate(src: list[list[int]] | None, tgt: list[list[int]], indices: list[int]) -> Batch:
    """The Batch of examples `indices` from token-id lists without bos/eos (src None for LM)."""
    src_t = None if src is None else pad_sequences([src[i] + [EOS] for i in indices])
    tgt_in = pad_sequences([[BOS] + tgt[i] for i in indices])
    tgt_out = pad_sequences([tgt[i] + [EOS] for i in indices])
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
