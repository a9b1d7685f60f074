"""Continuations of a language model's prompts: greedy, beam or sampled (temperature, top-k, top-p), one token at a
time on the decoder's key/value caches (a prompt is read once, each later step reads its one new position; with
grouped-query attention a layer caches kv_heads keys and values, not one per query head). Greedy search gives what
`generate(do_sample=False)` of the run's LLaMA export gives (frozen_sweep.weights.llama_hf)."""

import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from frozen_sweep.evaluate.decode import select_rows
from frozen_sweep.model import Transformer


@dataclass(frozen=True)
class Sampling:
    """Each next token drawn from the model's distribution: its logits divided by `temperature`, cut to the `top_k`
    most likely tokens, then to the fewest whose probabilities sum to at least `top_p` (None: no cut)."""

    temperature: float = 1.0
    top_k: Optional[int] = None
    top_p: Optional[float] = None

    def filter(self, logits: Tensor) -> Tensor:  # (N, V) → (N, V), -inf where a token may not be drawn
        logits = logits / self.temperature
        if self.top_k is not None and self.top_k < logits.shape[-1]:
            kth = logits.topk(self.top_k, dim=-1).values[:, -1:]  # (N, 1)
            logits = logits.masked_fill(logits < kth, -math.inf)
        if self.top_p is not None:
            ranked, order = logits.sort(dim=-1, descending=True)  # (N, V)
            probs = ranked.softmax(-1)
            beyond = probs.cumsum(-1) - probs >= self.top_p  # the more likely tokens already sum to top_p
            cut = beyond.scatter(-1, order, beyond)  # back in vocabulary order
            logits = logits.masked_fill(cut, -math.inf)  # the most likely token always stays (before = 0)
        return logits


def next_logits(model: Transformer, tokens: Tensor, caches: Optional[list], fed: int) -> Tensor:
    """Logits of the token after each row of `tokens` (N, t): with caches, only the positions from `fed` on are run
    (the rest are cached); without, the whole prefix again. → (N, V)"""
    if caches is None:
        return model.output(model.decoder(model.tgt_embed(tokens))[:, -1])
    return model.decode(tokens[:, fed:], caches=caches, start=fed)[:, -1]


@torch.inference_mode()
def continue_prompt(
    model: Transformer,
    prompt: Tensor,  # (1, T) ids, bos first
    max_new_tokens: int,
    eos: int,
    beam: int = 1,
    sampling: Optional[Sampling] = None,
    generator: Optional[torch.Generator] = None,
    cache: bool = True,
) -> list[int]:
    """The prompt's continuation (ids, eos left out): at most `max_new_tokens`, and no further than the model's
    positions; it ends at eos. Beam 1 without `sampling` is greedy search; `sampling` draws each token with
    `generator`; `beam` > 1 searches `beam` hypotheses. `cache=False` reruns the whole prefix at every step (the same
    tokens, slower)."""
    model.eval()
    steps = min(max_new_tokens, model.tgt_embed.max_positions - prompt.shape[1])
    if beam > 1:
        return _beam(model, prompt, steps, eos, beam, cache)
    caches = model.new_caches() if cache else None
    tokens, out, fed = prompt, [], 0
    for _ in range(steps):
        logits = next_logits(model, tokens, caches, fed).float()  # (1, V)
        fed = tokens.shape[1]
        if sampling is None:
            nxt = logits.argmax(-1, keepdim=True)  # (1, 1)
        else:
            nxt = torch.multinomial(sampling.filter(logits).softmax(-1), 1, generator=generator)  # (1, 1)
        if int(nxt) == eos:
            break
        out.append(int(nxt))
        tokens = torch.cat([tokens, nxt], dim=1)  # (1, t + 1)
    return out


def _beam(model: Transformer, prompt: Tensor, steps: int, eos: int, beam: int, cache: bool) -> list[int]:
    """Beam search of one prompt: of the 2·beam best continuations at a step, those ending in eos within the top
    `beam` are finished, the best `beam` others stay live; it stops once `beam` have finished or after `steps`
    tokens (the live ones then count as finished). Hypotheses rank by log-probability per new token (eos included).
    """
    caches = model.new_caches() if cache else None
    tokens, scores = prompt, torch.zeros(1, device=prompt.device)  # (n, t), (n,): summed log-probs of the live rows
    finished: list[tuple[float, list[int]]] = []
    T, fed = prompt.shape[1], 0
    for t in range(steps):
        logp = F.log_softmax(next_logits(model, tokens, caches, fed).float(), -1)  # (n, V)
        fed = tokens.shape[1]
        V = logp.shape[1]
        top, idx = (scores.unsqueeze(1) + logp).view(-1).topk(min(2 * beam, logp.numel()))
        live: list[tuple[float, int, int]] = []  # (summed log-prob, row, token)
        for rank, (score, i) in enumerate(zip(top.tolist(), idx.tolist())):
            row, token = divmod(i, V)
            if token == eos:
                if rank < beam:
                    finished.append((score / (t + 1), tokens[row, T:].tolist()))
            elif len(live) < beam:
                live.append((score, row, token))
        if len(finished) >= beam or not live:
            break
        rows = torch.tensor([row for _, row, _ in live], device=prompt.device)
        new = torch.tensor([[token] for _, _, token in live], device=prompt.device)
        tokens = torch.cat([tokens[rows], new], dim=1)  # (beam, t + 1)
        scores = torch.tensor([score for score, _, _ in live], device=prompt.device)
        if caches is not None:
            select_rows(caches, rows, keys=("self_k", "self_v"))
    else:  # the length limit: the live hypotheses end there
        finished += [(float(s) / max(1, tokens.shape[1] - T), row[T:]) for s, row in zip(scores, tokens.tolist())]
    return max(finished)[1] if finished else []
