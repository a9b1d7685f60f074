"""Transformer building blocks: attention, feed-forward, encoder and decoder layers.

Module types matter: `frozen_sweep.model.components` sorts parameters into the paper's groups by the type of the
module that owns them (`Attention` → att, `FeedForward` and `SwiGLU` → ffn, anything else here, such as norms →
other). The model options (docs/concepts.md) pick the norm, the FFN, the positions, the key/value heads and biases.
"""

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from frozen_sweep.config import Activation, FfnKind, NormPosition, Positions
from frozen_sweep.model.rotary import Rotary

# A per-layer decoding cache: projected keys and values, each (B, kv_heads, L, hd).
LayerCache = dict[str, Tensor]


class Attention(nn.Module):
    """Multi-head attention on `scaled_dot_product_attention`, with an optional key/value cache for decoding;
    `kv_heads` < `heads`: grouped-query attention, query head h reading key/value head h // (heads / kv_heads);
    `rotary`: queries and keys rotated by their positions (self-attention only); `qkv_bias`: biases on the query, key
    and value projections though `bias` is off (Qwen2's)."""

    def __init__(self, d_model: int, heads: int, dropout: float, kv_heads: Optional[int] = None, bias: bool = True,
                 rotary: Optional[Rotary] = None, qkv_bias: bool = False):  # fmt: skip
        super().__init__()
        self.heads, self.kv_heads = heads, kv_heads or heads
        self.dropout = dropout
        kv_dim = self.kv_heads * (d_model // heads)
        self.q_proj = nn.Linear(d_model, d_model, bias=bias or qkv_bias)
        self.k_proj = nn.Linear(d_model, kv_dim, bias=bias or qkv_bias)
        self.v_proj = nn.Linear(d_model, kv_dim, bias=bias or qkv_bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.rotary = rotary

    @staticmethod
    def split_heads(x: Tensor, heads: int) -> Tensor:
        B, L, D = x.shape
        return x.view(B, L, heads, D // heads).transpose(1, 2)  # (B, heads, L, hd)

    def project_kv(self, source: Tensor, start: int = 0) -> tuple[Tensor, Tensor]:
        """Keys and values, each (B, kv_heads, S, hd); `start`: the position of source[:, 0] (rotary)."""
        k = self.split_heads(self.k_proj(source), self.kv_heads)
        if self.rotary is not None:
            k = self.rotary(k, start)
        return k, self.split_heads(self.v_proj(source), self.kv_heads)

    def forward(
        self,
        x: Tensor,  # (N, T, D) queries, N a multiple of B (G query rows a key row, G = N / B; self-attention: G = 1)
        kv: tuple[Tensor, Tensor],  # keys and values, each (B, kv_heads, S, hd)
        mask: Optional[Tensor] = None,  # (B, 1, 1, S) True (or 0 when additive) where attention is allowed
        causal: bool = False,  # only with G = 1
        start: int = 0,  # the position of x[:, 0] (rotary)
    ) -> Tensor:
        q = self.split_heads(self.q_proj(x), self.heads)  # (N, H, T, hd)
        if self.rotary is not None:
            q = self.rotary(q, start)
        k, v = kv
        N, H, T, hd = q.shape
        B = k.shape[0]  # N = B·G: G consecutive query rows share a row of keys (a sentence's beams, cross-attention)
        G = N // B
        # the G rows' queries as G·T queries of one row: keys and values are read once per sentence, not per beam
        q = q.view(B, G, H, T, hd).transpose(1, 2).reshape(B, H, G * T, hd)
        p = self.dropout if self.training else 0.0
        gqa = self.kv_heads != self.heads
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=causal, enable_gqa=gqa)
        y = y.view(B, H, G, T, hd).permute(0, 2, 3, 1, 4)  # (B, G, T, H, hd)
        return self.out_proj(y.reshape(N, T, H * hd))  # (N, T, D)


class FeedForward(nn.Module):
    def __init__(self, d_model: int, ffn_dim: int, activation: Activation, dropout: float, bias: bool = True):
        super().__init__()
        self.fc1 = nn.Linear(d_model, ffn_dim, bias=bias)
        self.fc2 = nn.Linear(ffn_dim, d_model, bias=bias)
        self.act = nn.ReLU() if activation == Activation.relu else nn.GELU()
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.dropout(self.act(self.fc1(x))))  # (B, T, D)


class SwiGLU(nn.Module):
    """LLaMA's gated feed-forward block: down(silu(gate(x)) * up(x)); gate and up are d → ffn_dim, down ffn_dim → d."""

    def __init__(self, d_model: int, ffn_dim: int, dropout: float, bias: bool = True):
        super().__init__()
        self.gate = nn.Linear(d_model, ffn_dim, bias=bias)
        self.up = nn.Linear(d_model, ffn_dim, bias=bias)
        self.down = nn.Linear(ffn_dim, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:  # (B, T, D)
        return self.down(self.dropout(F.silu(self.gate(x)) * self.up(x)))  # (B, T, D)


def make_ffn(cfg) -> nn.Module:
    if cfg.ffn == FfnKind.swiglu:
        return SwiGLU(cfg.d_model, cfg.ffn_dim, cfg.activation_dropout, cfg.bias)
    return FeedForward(cfg.d_model, cfg.ffn_dim, cfg.activation, cfg.activation_dropout, cfg.bias)


def make_attention(cfg, self_attention: bool) -> Attention:
    """Self- or cross-attention; rotary positions rotate self-attention only (a source position and a target
    position are not on one axis)."""
    rotary = None
    if self_attention and cfg.positions == Positions.rope:
        rotary = Rotary(int(cfg.d_model // cfg.heads * cfg.rope_fraction), cfg.max_positions, cfg.rope_base)
    return Attention(cfg.d_model, cfg.heads, cfg.attention_dropout, cfg.kv_heads, cfg.bias, rotary, cfg.qkv_bias)


def make_norm(cfg) -> nn.Module:
    if cfg.norm == NormPosition.rms:
        return nn.RMSNorm(cfg.d_model, eps=cfg.norm_eps)
    return nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps, bias=cfg.bias)


def in_compute_dtype(x: Tensor) -> Tensor:
    """`x` in autocast's dtype when autocast is on, cast once for every projection that reads it: autocast casts a
    Linear's input per call, three times for self-attention's queries, keys and values (and the gradients flow back
    through three casts and fp32 sums)."""
    if torch.is_autocast_enabled(x.device.type):
        return x.to(torch.get_autocast_dtype(x.device.type))
    return x


class Residual(nn.Module):
    """Wraps a sublayer with dropout, the residual connection and its layer norm (post- or pre-norm)."""

    def __init__(self, cfg):
        super().__init__()
        self.pre = cfg.norm != NormPosition.post
        self.norm = make_norm(cfg)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor, sublayer) -> Tensor:
        if self.pre:
            return x + self.branch(x, sublayer)
        return self.norm(x + self.dropout(sublayer(in_compute_dtype(x))))  # the residual stays in x's dtype

    def branch(self, x: Tensor, sublayer) -> Tensor:
        """What a pre-norm sublayer adds to the residual."""
        return self.dropout(sublayer(in_compute_dtype(self.norm(x))))


class EncoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = make_attention(cfg, self_attention=True)
        self.self_attn_res = Residual(cfg)
        self.ffn = make_ffn(cfg)
        self.ffn_res = Residual(cfg)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:  # x (B, S, D), mask (B, 1, 1, S)
        x = self.self_attn_res(x, lambda h: self.self_attn(h, self.self_attn.project_kv(h), mask))
        return self.ffn_res(x, self.ffn)


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to the encoder (absent in a language model), feed-forward; with
    `cfg.parallel` (a language model's), attention and feed-forward both read the layer's input and both add to it."""

    def __init__(self, cfg, cross_attention: bool):
        super().__init__()
        self.parallel = cfg.parallel
        self.self_attn = make_attention(cfg, self_attention=True)
        self.self_attn_res = Residual(cfg)
        if cross_attention:
            self.cross_attn = make_attention(cfg, self_attention=False)
            self.cross_attn_res = Residual(cfg)
        else:
            self.cross_attn = None
        self.ffn = make_ffn(cfg)
        self.ffn_res = Residual(cfg)

    def forward(
        self,
        x: Tensor,  # (B·G, T, D): G consecutive rows a sentence (beam search's hypotheses)
        memory: Optional[Tensor] = None,  # (B, S, D) encoder output, once per sentence
        memory_mask: Optional[Tensor] = None,  # (B, 1, 1, S)
        cache: Optional[LayerCache] = None,  # incremental decoding: x holds only the newest position
    ) -> Tensor:
        def self_attention(h: Tensor) -> Tensor:
            if cache is None:
                return self.self_attn(h, self.self_attn.project_kv(h), causal=True)
            start = cache["self_k"].shape[2] if "self_k" in cache else 0  # the position of h[:, 0]
            if start and h.shape[1] > 1:
                raise ValueError("decoding with a cache takes several positions in its first call only (a prompt)")
            k, v = self.self_attn.project_kv(h, start)
            if "self_k" in cache:  # append this step's keys/values to the earlier ones
                k = torch.cat([cache["self_k"], k], dim=2)
                v = torch.cat([cache["self_v"], v], dim=2)
            cache["self_k"], cache["self_v"] = k, v
            # a prompt's positions see those before them; a later position sees every cached one
            return self.self_attn(h, (k, v), causal=h.shape[1] > 1, start=start)

        def cross_attention(h: Tensor) -> Tensor:
            if cache is None:
                kv = self.cross_attn.project_kv(memory)
            else:  # the encoder output does not change during decoding: project it once
                if "cross_k" not in cache:  # contiguous: attention reads them at every step (1.3× faster on a CPU)
                    cache["cross_k"], cache["cross_v"] = (t.contiguous() for t in self.cross_attn.project_kv(memory))
                kv = cache["cross_k"], cache["cross_v"]
            return self.cross_attn(h, kv, memory_mask)

        if self.parallel:
            return x + self.self_attn_res.branch(x, self_attention) + self.ffn_res.branch(x, self.ffn)
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
