"""Transformer building blocks: attention, feed-forward, encoder and decoder layers.

Module types matter: `frozen_sweep.model.components` sorts parameters into the paper's groups by the type of the
module that owns them (`Attention` → att, `FeedForward` → ffn, anything else here, such as layer norms → other).
"""

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from frozen_sweep.config import Activation, NormPosition

# A per-layer decoding cache: projected keys and values, each (B, H, L, hd).
LayerCache = dict[str, Tensor]


class Attention(nn.Module):
    """Multi-head attention on `scaled_dot_product_attention`, with an optional key/value cache for decoding."""

    def __init__(self, d_model: int, heads: int, dropout: float):
        super().__init__()
        self.heads = heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def split_heads(self, x: Tensor) -> Tensor:
        B, L, D = x.shape
        return x.view(B, L, self.heads, D // self.heads).transpose(1, 2)  # (B, H, L, hd)

    def project_kv(self, source: Tensor) -> tuple[Tensor, Tensor]:
        return self.split_heads(self.k_proj(source)), self.split_heads(self.v_proj(source))

    def forward(
        self,
        x: Tensor,  # (B, T, D) queries
        kv: tuple[Tensor, Tensor],  # keys and values, each (B, H, S, hd)
        mask: Optional[Tensor] = None,  # (B, 1, 1, S) True where attention is allowed
        causal: bool = False,
    ) -> Tensor:
        q = self.split_heads(self.q_proj(x))  # (B, H, T, hd)
        k, v = kv
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=causal)
        B, H, T, hd = y.shape
        return self.out_proj(y.transpose(1, 2).reshape(B, T, H * hd))  # (B, T, D)


class FeedForward(nn.Module):
    def __init__(self, d_model: int, ffn_dim: int, activation: Activation, dropout: float):
        super().__init__()
        self.fc1 = nn.Linear(d_model, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, d_model)
        self.act = nn.ReLU() if activation == Activation.relu else nn.GELU()
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.dropout(self.act(self.fc1(x))))  # (B, T, D)


class Residual(nn.Module):
    """Wraps a sublayer with dropout, the residual connection and its layer norm (post- or pre-norm)."""

    def __init__(self, d_model: int, norm: NormPosition, dropout: float):
        super().__init__()
        self.pre = norm == NormPosition.pre
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, sublayer) -> Tensor:
        if self.pre:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = Attention(cfg.d_model, cfg.heads, cfg.attention_dropout)
        self.self_attn_res = Residual(cfg.d_model, cfg.norm, cfg.dropout)
        self.ffn = FeedForward(cfg.d_model, cfg.ffn_dim, cfg.activation, cfg.activation_dropout)
        self.ffn_res = Residual(cfg.d_model, cfg.norm, cfg.dropout)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:  # x (B, S, D), mask (B, 1, 1, S)
        x = self.self_attn_res(x, lambda h: self.self_attn(h, self.self_attn.project_kv(h), mask))
        return self.ffn_res(x, self.ffn)


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to the encoder (absent in a language model), feed-forward."""

    def __init__(self, cfg, cross_attention: bool):
        super().__init__()
        self.self_attn = Attention(cfg.d_model, cfg.heads, cfg.attention_dropout)
        self.self_attn_res = Residual(cfg.d_model, cfg.norm, cfg.dropout)
        if cross_attention:
            self.cross_attn = Attention(cfg.d_model, cfg.heads, cfg.attention_dropout)
            self.cross_attn_res = Residual(cfg.d_model, cfg.norm, cfg.dropout)
        else:
            self.cross_attn = None
        self.ffn = FeedForward(cfg.d_model, cfg.ffn_dim, cfg.activation, cfg.activation_dropout)
        self.ffn_res = Residual(cfg.d_model, cfg.norm, cfg.dropout)

    def forward(
        self,
        x: Tensor,  # (B, T, D)
        memory: Optional[Tensor] = None,  # (B, S, D) encoder output
        memory_mask: Optional[Tensor] = None,  # (B, 1, 1, S)
        cache: Optional[LayerCache] = None,  # incremental decoding: x holds only the newest position
    ) -> Tensor:
        def self_attention(h: Tensor) -> Tensor:
            k, v = self.self_attn.project_kv(h)
            if cache is None:
                return self.self_attn(h, (k, v), causal=True)
            if "self_k" in cache:  # append this step's keys/values to the earlier ones
                k = torch.cat([cache["self_k"], k], dim=2)
                v = torch.cat([cache["self_v"], v], dim=2)
            cache["self_k"], cache["self_v"] = k, v
            return self.self_attn(h, (k, v))  # one query sees every cached position

        def cross_attention(h: Tensor) -> Tensor:
            if cache is None:
                kv = self.cross_attn.project_kv(memory)
            else:  # the encoder output does not change during decoding: project it once
                if "cross_k" not in cache:
                    cache["cross_k"], cache["cross_v"] = self.cross_attn.project_kv(memory)
                kv = cache["cross_k"], cache["cross_v"]
            return self.cross_attn(h, kv, memory_mask)

        x = self.self_attn_res(x, self_attention)
        if self.cross_attn is not None:
            x = self.cross_attn_res(x, cross_attention)
        return self.ffn_res(x, self.ffn)


def sinusoidal_positions(max_positions: int, d_model: int) -> Tensor:
    """The fixed sine/cosine table of Vaswani et al., (max_positions, d_model); no parameters. Computed on the CPU
    even when the model is built on the meta device (a model whose frozen weights are drawn on the fly)."""
    position = torch.arange(max_positions, dtype=torch.float32, device="cpu").unsqueeze(1)
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32, device="cpu") * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_positions, d_model, device="cpu")
    table[:, 0::2] = torch.sin(position * freq)
    table[:, 1::2] = torch.cos(position * freq[: d_model // 2])
    return table
