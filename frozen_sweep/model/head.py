"""The head on an encoder for a label or a number per example (RoBERTa's, as fairseq's RobertaClassificationHead and
Hugging Face's RobertaClassificationHead build it): the pooled states → dropout → dense d→d → tanh → dropout →
projection to the classes' scores, or to one number (a regression). Its own module type, so that its parameters are
their own component, `head`."""

import torch.nn.functional as F
from torch import Tensor, nn

from frozen_sweep.config import Pooling


class ClassificationHead(nn.Module):
    def __init__(self, d_model: int, outputs: int, dropout: float, pooling: Pooling = Pooling.first):
        super().__init__()
        self.pooling, self.scalar = Pooling(pooling), outputs == 1
        self.dropout = nn.Dropout(dropout)
        self.dense = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, outputs)

    def forward(self, states: Tensor, real: Tensor) -> Tensor:  # (B, T, D), (B, T) True at tokens → (B, C) or (B,)
        x = self.dropout(pool(states, real, self.pooling))  # (B, D)
        x = self.out_proj(self.dropout(self.dense(x).tanh()))  # (B, C)
        return x.squeeze(-1) if self.scalar else x


class MaskedLmTransform(nn.Module):
    """BERT's and RoBERTa's masked-LM head before its output projection: dense d→d, GELU, LayerNorm."""

    def __init__(self, cfg):
        super().__init__()
        self.dense = nn.Linear(cfg.d_model, cfg.d_model)
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps)

    def forward(self, states: Tensor) -> Tensor:  # (B, T, D) → (B, T, D)
        return self.norm(F.gelu(self.dense(states)))


def pool(states: Tensor, real: Tensor, pooling: Pooling) -> Tensor:
    """(B, T, D) → (B, D): the first token's state (bos), or the mean over each example's tokens, padding left out
    (bos and eos count: they are the example's)."""
    if pooling == Pooling.first:
        return states[:, 0]
    weights = real.to(states.dtype).unsqueeze(-1)  # (B, T, 1)
    return (states * weights).sum(1) / weights.sum(1).clamp(min=1)
