"""Reservoir layers (Shen et al. 2021): frozen random layers interleaved with trainable ones.

A reservoir is never trained: its parameters are drawn once from (seed, name) — weight matrices with
`reservoir.init` (orthogonal by default), biases and norms as PyTorch initialises them — and frozen. Gradients still
flow *through* it to the trainable layers below, unless backskipping is on:

Backskipping: the reservoir runs forward without autograd, and in the backward pass its Jacobian is taken as the
identity — the gradient arriving at its output is handed unchanged to its input (a straight-through estimator; the
layers are residual, so x ↦ x + f(x) has Jacobian I + ∂f/∂x and the identity drops the second term). No activations
are stored for it and no backward matmuls run. In a decoder the reservoir's cross-attention path into the encoder
gets no gradient either.

A reservoir (or any frozen layer) with nothing trainable below it records no graph at all: autograd only tracks
operations whose inputs require gradients, so its backward pass never runs, backskipping or not.
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from frozen_sweep.config import Init, ReservoirType
from frozen_sweep.model.layers import DecoderLayer, EncoderLayer, make_ffn, make_norm


class Reservoir(nn.Module):
    """Marks a frozen random layer: `frozen_sweep.weights.freeze` draws its parameters with `init` and freezes them."""

    def __init__(self, layer: nn.Module, init: Init):
        super().__init__()
        self.layer = layer
        self.init = Init(init)

    def forward(self, x: Tensor, *args, **kwargs) -> Tensor:
        return self.layer(x, *args, **kwargs)


class FfnReservoir(nn.Module):
    """x + FFN(norm(x)): position-wise, so it serves encoders and decoders alike (decoder arguments are ignored)."""

    def __init__(self, cfg):
        super().__init__()
        self.norm = make_norm(cfg)
        self.ffn = make_ffn(cfg)

    def forward(self, x: Tensor, *unused, **unused_kwargs) -> Tensor:  # (B, T, D) → (B, T, D)
        return x + self.ffn(self.norm(x))


class BiGruReservoir(nn.Module):
    """x + BiGRU(LN(x)) with d/2 units per direction; padding is packed away, so it never reaches real tokens."""

    def __init__(self, cfg):
        super().__init__()
        self.norm = make_norm(cfg)
        self.gru = nn.GRU(cfg.d_model, cfg.d_model // 2, batch_first=True, bidirectional=True)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:  # x (B, S, D), mask (B, 1, 1, S)
        lengths = mask.flatten(1).sum(1).cpu()
        packed = pack_padded_sequence(self.norm(x), lengths, batch_first=True, enforce_sorted=False)
        h, _ = pad_packed_sequence(self.gru(packed)[0], batch_first=True, total_length=x.shape[1])
        return x + h  # (B, S, D)


class ConvReservoir(nn.Module):
    """x + ReLU(Conv1d(LN(x))) over time with same padding; padded positions are zeroed before the convolution."""

    def __init__(self, cfg, kernel: int):
        super().__init__()
        self.norm = make_norm(cfg)
        self.conv = nn.Conv1d(cfg.d_model, cfg.d_model, kernel, padding=kernel // 2)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:  # x (B, S, D), mask (B, 1, 1, S)
        h = self.norm(x) * mask.flatten(1).unsqueeze(-1)  # (B, S, D), zeros at padding
        return x + F.relu(self.conv(h.transpose(1, 2)).transpose(1, 2))


def make_reservoir(reservoir_cfg, model_cfg, decoder: bool, cross_attention: bool) -> Reservoir:
    kind = ReservoirType(reservoir_cfg.type)
    if kind == ReservoirType.transformer:
        layer = DecoderLayer(model_cfg, cross_attention) if decoder else EncoderLayer(model_cfg)
    elif kind == ReservoirType.ffn:
        layer = FfnReservoir(model_cfg)
    elif kind == ReservoirType.bigru:
        layer = BiGruReservoir(model_cfg)
    else:
        layer = ConvReservoir(model_cfg, reservoir_cfg.conv_kernel)
    return Reservoir(layer, reservoir_cfg.init)


class SkipBackward(torch.autograd.Function):
    """Forward: the reservoir's output `y` (computed without autograd); backward: the gradient of `y` goes to `x`."""

    @staticmethod
    def forward(ctx, x: Tensor, y: Tensor) -> Tensor:
        return y.clone()

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:
        return grad, None


def run_reservoir(layer: Reservoir, x: Tensor, backskip: bool, *args, **kwargs) -> Tensor:
    """Apply a reservoir; with backskipping, without autograd and with the identity as its backward."""
    if not (backskip and torch.is_grad_enabled()):
        return layer(x, *args, **kwargs)
    with torch.no_grad():
        y = layer(x, *args, **kwargs)
    return SkipBackward.apply(x, y) if x.requires_grad else y
