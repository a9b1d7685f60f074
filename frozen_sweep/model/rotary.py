"""Rotary position embeddings (Su et al. 2021, as LLaMA applies them): each query and key of self-attention is
rotated by an angle proportional to its position, so that their dot product depends on the positions' difference
only. No parameters. The layout is Hugging Face LLaMA's: a head's dimension i pairs with i + head_dim/2
(`rotate_half`), frequencies base^(-2i/head_dim). With `dims` < head_dim (GPT-NeoX's partial rotary), the first `dims`
dimensions of a head are rotated as a head of that width, and the rest pass unchanged."""

import torch
from torch import Tensor, nn


def rotate_half(x: Tensor) -> Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


_TABLES: dict[tuple[int, int, float], tuple[Tensor, Tensor]] = {}  # by shape: a process builds few shapes


def tables(dims: int, max_positions: int, base: float) -> tuple[Tensor, Tensor]:
    """(cos, sin), each (max_positions, dims) float32 on the CPU, computed once and shared, never written: every layer
    of a model (and every model of that shape) reads the same pair, so a 30-layer model at 8,192 positions holds 4 MiB
    of them, not 120. Computed on the CPU even when the model is built on the meta device (frozen weights drawn on
    the fly)."""
    key = (dims, max_positions, base)
    if key not in _TABLES:
        inv_freq = 1.0 / (base ** (torch.arange(0, dims, 2, dtype=torch.int64, device="cpu").float() / dims))
        angles = torch.arange(max_positions, dtype=torch.float32, device="cpu")[:, None] * inv_freq  # (P, dims/2)
        angles = torch.cat((angles, angles), dim=-1)  # (P, dims)
        _TABLES[key] = angles.cos(), angles.sin()
    return _TABLES[key]


class Rotary(nn.Module):
    def __init__(self, dims: int, max_positions: int, base: float):
        super().__init__()
        self.dims = dims
        cos, sin = tables(dims, max_positions, base)  # buffers: moved with the model (a copy per layer on a GPU)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, x: Tensor, start: int = 0) -> Tensor:  # (B, H, T, hd), x[:, :, 0] at position `start`
        T = x.shape[2]
        if start + T > self.cos.shape[0]:
            raise ValueError(f"sequence of {start + T} tokens exceeds model.max_positions={self.cos.shape[0]}")
        cos, sin = self.cos[start : start + T].to(x.dtype), self.sin[start : start + T].to(x.dtype)  # (T, dims)
        if self.dims == x.shape[-1]:
            return x * cos + rotate_half(x) * sin
        rotated, rest = x[..., : self.dims], x[..., self.dims :]
        return torch.cat((rotated * cos + rotate_half(rotated) * sin, rest), dim=-1)  # (B, H, T, hd)
