"""BERT/RoBERTa masking for masked language modelling, applied to a collated Batch.

Per sentence, floor(mask_prob · n + u) of its n maskable tokens are picked (u uniform in [0, 1), as fairseq's
MaskTokensDataset rounds), at least one: the rate is exact in expectation and no batch is left without a target. Of the
picked tokens, `mask_replace_prob` are shown as <mask>, `random_replace_prob` as a random ordinary piece and the rest
unchanged; the model predicts the original token at every picked position and nothing elsewhere. Special tokens (pad,
unk, bos, eos, <mask> and whatever frames a text) are never picked, and random replacements are drawn from the
ordinary pieces only: the vocabulary's own ids (data/specials.py), ours or a checkpoint's tokenizer's.

A row is what the vocabulary's masked LMs read: ours `text eos` (as every masked LM here was trained), a checkpoint's
tokenizer's its framing of a text in pre-training, `prefix text suffix` (BERT's `[CLS] text [SEP]`, RoBERTa's
`<s> text </s>`: the whole row the batch holds).

Every draw comes from a torch.Generator seeded by a string (sha256). A training batch is masked at once, seeded by
(seed, epoch, the batch's first example): the same seed gives the same masks on any machine and in a resumed job,
whichever order or process collates the batch. Validation and test sentences are masked one by one, seeded by (split,
sentence index) alone: every run, whatever its seed or batch size, is scored on the same masked positions (a
generator per sentence costs ≈80 µs: fine once per run, too slow for every training batch).
"""

import functools
import hashlib

import torch

from frozen_sweep.config import TaskKind
from frozen_sweep.data.batching import Batch
from frozen_sweep.data.split import make_batches
from frozen_sweep.data.specials import OURS, Specials


def generator(key: str) -> torch.Generator:
    """A CPU generator seeded from the sha256 of `key`: stable across runs, machines and torch's hash seed."""
    return torch.Generator().manual_seed(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little") >> 1)


def train_key(seed: int, epoch: int, first_example: int) -> str:
    return f"mask/train/{seed}/{epoch}/{first_example}"


def eval_key(split: str, sentence: int) -> str:
    return f"mask/{split}/{sentence}"


@functools.lru_cache(maxsize=8)
def special_ids(specials: Specials) -> torch.Tensor:
    """Every id that frames or fills a row: never picked, never drawn as a random replacement."""
    named = (specials.pad, specials.eos, specials.bos, specials.unk, specials.mask)
    ids = {i for i in (*named, *specials.prefix, *specials.middle, *specials.suffix) if i is not None}
    return torch.tensor(sorted(ids))


@functools.lru_cache(maxsize=8)
def ordinary_ids(vocab_size: int, specials: Specials) -> torch.Tensor:
    """The ids a random replacement is drawn from: all but the special ones (ours: 5 … V-1)."""
    ids = torch.arange(vocab_size)
    return ids[~torch.isin(ids, special_ids(specials))]


def mask_tokens(tokens: torch.Tensor, task_cfg, vocab_size: int, gen: torch.Generator,
                specials: Specials = OURS) -> tuple[torch.Tensor, ...]:  # fmt: skip
    """tokens (B, L) → (inputs (B, L) with the picked positions replaced, targets (B, L): the original token at each
    picked position, the vocabulary's pad elsewhere)."""
    special = special_ids(specials)
    maskable = ~torch.isin(tokens, special)  # (B, L)
    counts = maskable.sum(1)  # (B,)
    picks = (task_cfg.mask_prob * counts + torch.rand(counts.shape, generator=gen)).floor().long()
    picks = torch.minimum(picks.clamp(min=1), counts)  # (B,) at least one where a sentence has a maskable token
    scores = torch.rand(tokens.shape, generator=gen).masked_fill(~maskable, 2.0)  # (B, L) unmaskable sort last
    rank = scores.argsort(1).argsort(1)  # (B, L) each position's rank within its row
    picked = rank < picks.unsqueeze(1)  # (B, L)

    how = torch.rand(tokens.shape, generator=gen)  # (B, L): < mask_replace → <mask>, then random, then kept
    to_mask = picked & (how < task_cfg.mask_replace_prob)
    to_random = picked & ~to_mask & (how < task_cfg.mask_replace_prob + task_cfg.random_replace_prob)
    ordinary = ordinary_ids(vocab_size, specials)  # ours: drawn as randint(5, V) drew them
    random_ids = ordinary[torch.randint(len(ordinary), tokens.shape, generator=gen)]  # (B, L)
    inputs = torch.where(to_mask, specials.mask, torch.where(to_random, random_ids, tokens))
    targets = tokens.masked_fill(~picked, specials.pad)
    return inputs, targets


def mlm_rows(batch: Batch, specials: Specials) -> torch.Tensor:
    """(B, L) the rows of a language-modelling Batch as a masked LM reads them (the module's docstring)."""
    return batch.tgt_out if specials == OURS else torch.cat([batch.tgt_in[:, :1], batch.tgt_out], 1)


def framing_length(specials: Specials) -> int:
    """The special tokens `mlm_rows` adds to a text: ours its eos, a checkpoint's the prefix and the eos."""
    return 1 if specials == OURS else len(specials.prefix) + 1


def mask_batch(batch: Batch, task_cfg, vocab_size: int, gen: torch.Generator, specials: Specials = OURS) -> Batch:
    """The MLM Batch of a language-modelling Batch: its rows (`mlm_rows`) masked are the encoder's input (`tgt_in`),
    `tgt_out` holds the targets (pad where nothing is predicted), `n_tokens` counts the targets."""
    inputs, targets = mask_tokens(mlm_rows(batch, specials), task_cfg, vocab_size, gen, specials)
    return Batch(None, inputs, targets, int((targets != specials.pad).sum()), batch.indices)


def mask_train_batch(batch: Batch, task_cfg, vocab_size: int, seed: int, epoch: int,
                     specials: Specials = OURS) -> Batch:  # fmt: skip
    """`mask_batch` for a training batch of `epoch`, with the generator of (seed, epoch, its first example)."""
    return mask_batch(batch, task_cfg, vocab_size, generator(train_key(seed, epoch, batch.indices[0])), specials)


def mask_eval_batch(batch: Batch, split: str, task_cfg, vocab_size: int, specials: Specials = OURS) -> Batch:
    """`mask_batch` for validation and test: each sentence masked with its own generator (eval_key), so that its masks
    do not depend on the batch it is in or on the padded length."""
    rows = mlm_rows(batch, specials)
    inputs, targets = rows.clone(), torch.full_like(rows, specials.pad)  # (B, L)
    lengths = (rows != specials.pad).sum(1).tolist()
    for row, (example, n) in enumerate(zip(batch.indices, lengths)):
        tokens = rows[row : row + 1, :n]  # (1, n)
        gen = generator(eval_key(split, example))
        inputs[row, :n], targets[row, :n] = mask_tokens(tokens, task_cfg, vocab_size, gen, specials)
    return Batch(None, inputs, targets, int((targets != specials.pad).sum()), batch.indices)


def held_out_batches(split, name: str, task_cfg, vocab_size: int, max_tokens: int, multiple: int = 1) -> list[Batch]:
    """The batches a held-out split (`name`: valid or test) is scored on, in plan order: masked for a masked LM (by
    the split's vocabulary's ids)."""
    batches = make_batches(split, max_tokens, False, multiple=multiple)
    if TaskKind(task_cfg.kind) == TaskKind.mlm:
        batches = [mask_eval_batch(batch, name, task_cfg, vocab_size, split.specials) for batch in batches]
    return batches
