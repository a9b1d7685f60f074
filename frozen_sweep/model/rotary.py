"""Rotary position embeddings (Su et al. 2021, as LLaMA applies them): each query and key of self-attention is
rotated by an angle proportional to its position, so that their dot product depends on the positions' difference
only. No parameters. The layout is Hugging Face LLaMA's: a head's dimension i pairs with i + head_dim/2
(`rotate_half`), frequencies base^(-2i/head_dim)."""

import torch
from torch import Tensor, nn


def rotate_half(x: Tensor) -> Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Rotary(nn.Module):
    def __init__(self, head_dim: int, max_positions: int, base: float):
        super().__init__()
        # computed on the CPU even when the model is built on the meta device (frozen weights drawn on the fly)
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64, device="cpu").float() / head_dim))
        angles = torch.arange(max_positions, dtype=torch.float32, device="cpu")[:, None] * inv_freq  # (P, hd/2)
        angles = torch.cat((angles, angles), dim=-1)  # (P, hd)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x: Tensor, start: int = 0) -> Tensor:  # (B, H, T, hd), x[:, :, 0] at position `start`
        T = x.shape[2]
        if start + T > self.cos.shape[0]:
            raise ValueError(f"sequence of {start + T} tokens exceeds model.max_positions={self.cos.shape[0]}")
        cos, sin = self.cos[start : start + T].to(x.dtype), self.sin[start : start + T].to(x.dtype)  # (T, hd)
        return x * cos + rotate_half(x) * sin
