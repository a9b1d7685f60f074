"""Several translation models searched as one (`translate RUN1 RUN2 ...`): at every step the log of the mean of
their next-token probabilities, fairseq's ensemble rule. It offers the calls beam search makes of a model (encode,
decode with key/value caches, new_caches), so the one search serves a model and an ensemble alike."""

import math

import torch
from torch import Tensor

from frozen_sweep.model import Transformer


class Ensemble:
    """`models` (the same vocabulary; any shapes) as one model for beam_search; their encoder outputs travel side by
    side in one tensor (B, S, D1 + D2 + ...) so that the search's row selection keeps them together."""

    def __init__(self, models: list[Transformer]):
        self.models = models
        self.pad_id = models[0].pad_id
        shortest = min(models, key=lambda m: m.tgt_embed.positions.shape[0])  # every member's positions suffice
        self.src_embed, self.tgt_embed = shortest.src_embed, shortest.tgt_embed
        self.widths = [m.src_embed.positions.shape[1] for m in models]  # each member's d_model

    def eval(self) -> "Ensemble":
        for model in self.models:
            model.eval()
        return self

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        encoded = [model.encode(src) for model in self.models]  # the same source, so the same padding mask
        return torch.cat([memory for memory, _ in encoded], dim=-1), encoded[0][1]  # (B, S, ΣD), (B, 1, 1, S)

    def new_caches(self) -> list[dict]:
        return [cache for model in self.models for cache in model.new_caches()]

    def decode(self, tgt_in: Tensor, memory: Tensor, mask: Tensor, caches: list[dict], start: int = 0) -> Tensor:
        """log of the members' mean next-token probabilities (B, T, V): a log-softmax of it is itself."""
        logps, offset, first = [], 0, 0
        for model, width in zip(self.models, self.widths):
            layers = len(model.decoder.layers)
            logits = model.decode(tgt_in, memory[..., offset : offset + width], mask, caches[first : first + layers],
                                  start)  # fmt: skip
            logps.append(torch.log_softmax(logits.float(), dim=-1))  # (B, T, V)
            offset, first = offset + width, first + layers
        return torch.logsumexp(torch.stack(logps), dim=0) - math.log(len(self.models))
