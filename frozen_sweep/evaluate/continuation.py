"""Greedy continuation of a language model's prompt, one token at a time on the decoder's key/value caches: what
`generate(do_sample=False)` of an exported model must reproduce (frozen_sweep.weights.llama_hf)."""

import torch
from torch import Tensor

from frozen_sweep.model import Transformer


@torch.no_grad()
def greedy_continuation(model: Transformer, prompt: Tensor, new_tokens: int, eos: int) -> list[int]:
    """prompt (1, T) ids, bos first → up to `new_tokens` next ids, each the argmax given the ones before; stops
    after eos."""
    model.eval()
    caches = model.new_caches()
    logits = model.decode(prompt, caches=caches)  # (1, T, V)
    out: list[int] = []
    for _ in range(new_tokens):
        nxt = int(logits[0, -1].argmax())
        out.append(nxt)
        if nxt == eos or prompt.shape[1] + len(out) >= model.tgt_embed.max_positions:
            break
        step = torch.tensor([[nxt]], device=prompt.device)
        logits = model.decode(step, caches=caches, start=prompt.shape[1] + len(out) - 1)  # (1, 1, V)
    return out
