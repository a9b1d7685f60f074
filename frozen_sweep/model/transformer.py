"""The encoder–decoder transformer (translation), the decoder-only transformer (language modelling) and the
encoder-only transformer (masked language modelling, RoBERTa's shape)."""

import math
from typing import Optional

import torch
from torch import Tensor, nn

from frozen_sweep.config import NormPosition, Positions, StackName, TieEmbeddings
from frozen_sweep.config.stack_layout import reservoir_pattern
from frozen_sweep.model.head import ClassificationHead, MaskedLmTransform
from frozen_sweep.model.layers import (DecoderLayer, EncoderLayer, LayerCache, in_compute_dtype, make_norm,
                                      sinusoidal_positions)
from frozen_sweep.model.reservoir import Reservoir, make_reservoir, run_reservoir


class Embeddings(nn.Module):
    """Token embeddings scaled by sqrt(d), plus fixed sinusoidal positions, then dropout; with rotary positions
    (applied in attention) the token embeddings alone, unscaled, as LLaMA's; with learned positions, as BERT's, the
    unscaled token embeddings plus a trained position table's rows from `cfg.position_offset` on. BERT's options: the
    first row of a token-type table added before the positions (`cfg.token_types`), a norm before dropout
    (`cfg.embed_norm`)."""

    def __init__(self, cfg, vocab_size: int, pad_id: int):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, cfg.d_model, padding_idx=pad_id)
        self.max_positions, self.offset = cfg.max_positions, cfg.position_offset
        self.kind = Positions(cfg.positions)
        if self.kind == Positions.sinusoidal:
            self.scale = math.sqrt(cfg.d_model)
            self.register_buffer("positions", sinusoidal_positions(cfg.max_positions, cfg.d_model), persistent=False)
        elif self.kind == Positions.learned:
            self.position_table = nn.Embedding(cfg.max_positions, cfg.d_model)
        self.token_type_table = nn.Embedding(cfg.token_types, cfg.d_model) if cfg.token_types else None
        self.norm = make_norm(cfg) if cfg.embed_norm else None
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, ids: Tensor, start: int = 0) -> Tensor:  # ids (B, T) → (B, T, D)
        T = ids.shape[1]
        if self.offset + start + T > self.max_positions:
            raise ValueError(f"sequence of {start + T} tokens exceeds model.max_positions={self.max_positions}"
                             + (f" less model.position_offset={self.offset}" if self.offset else ""))  # fmt: skip
        x = self.tokens(ids) * self.scale if self.kind == Positions.sinusoidal else self.tokens(ids)  # (B, T, D)
        if self.token_type_table is not None:  # every token is of the first type
            x = x + self.token_type_table.weight[0]
        if self.kind == Positions.sinusoidal:
            x = x + self.positions[start : start + T]
        elif self.kind == Positions.learned:
            x = x + self.position_table.weight[self.offset + start : self.offset + start + T]
        return self.dropout(x if self.norm is None else self.norm(x))


class Stack(nn.Module):
    """A stack of layers, some of them possibly reservoirs; pre-norm stacks end with a norm of their own."""

    def __init__(self, layers: list[nn.Module], cfg, backskip: bool = False):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.final_norm = make_norm(cfg) if cfg.norm != NormPosition.post else None
        self.backskip = backskip

    def forward(self, x: Tensor, *args, caches: Optional[list[LayerCache]] = None, **kwargs) -> Tensor:
        for i, layer in enumerate(self.layers):
            if caches is not None:
                kwargs["cache"] = caches[i]
            if isinstance(layer, Reservoir):
                x = run_reservoir(layer, x, self.backskip, *args, **kwargs)
            else:
                x = layer(x, *args, **kwargs)
        return self.final_norm(x) if self.final_norm is not None else x

    @property
    def pattern(self) -> str:
        """L for a trainable layer, R for a reservoir, bottom to top."""
        return "".join("R" if isinstance(layer, Reservoir) else "L" for layer in self.layers)


class OutputProjection(nn.Module):
    """Hidden states → vocabulary logits; its weight is the target embedding when tied (no bias, as in the paper,
    unless `bias`: BERT's masked-LM head)."""

    def __init__(self, d_model: int, vocab_size: int, bias: bool = False):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab_size, d_model))
        self.bias = nn.Parameter(torch.empty(vocab_size)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        logits = x @ self.weight.t()  # (B, T, V)
        return logits if self.bias is None else logits + self.bias


class Transformer(nn.Module):
    """Encoder–decoder when both stacks have layers; decoder-only language model without encoder layers, encoder-only
    masked language model without decoder layers (its output projection tied to the embedding unless
    tie_embeddings=none, as RoBERTa ties it), or with `head_outputs` a classifier or a regression (a head on the pooled
    states giving that many outputs, one: a number; no output projection); `reservoir` (a ReservoirConfig) turns some
    layers of one stack into frozen random reservoirs."""

    def __init__(self, cfg, vocab_size: int, pad_id: int, reservoir=None, head_outputs: Optional[int] = None):
        super().__init__()
        self.pad_id = pad_id
        self.is_lm = cfg.encoder_layers == 0
        self.is_encoder_only = cfg.decoder_layers == 0
        self.is_classifier = head_outputs is not None  # a classifier's or a regression's head

        def make_embeddings() -> Embeddings:
            return Embeddings(cfg, vocab_size, pad_id)

        def make_stack(name: StackName, layers: int, make_layer) -> Stack:
            on_this_stack = reservoir is not None and StackName(reservoir.stack) == name
            pattern = reservoir_pattern(layers, reservoir) if on_this_stack else "L" * layers
            decoder = name == StackName.decoder
            return Stack(
                [
                    make_reservoir(reservoir, cfg, decoder, not self.is_lm) if kind == "R" else make_layer()
                    for kind in pattern
                ],
                cfg,
                backskip=on_this_stack and reservoir.backskip,
            )

        if self.is_encoder_only:
            self.src_embed = make_embeddings()
            self.encoder = make_stack(StackName.encoder, cfg.encoder_layers, lambda: EncoderLayer(cfg))
            if self.is_classifier:  # a head on the pooled states, no output projection
                self.head = ClassificationHead(cfg.d_model, head_outputs, cfg.dropout, cfg.pooling)
                return
            self.output_transform = MaskedLmTransform(cfg) if cfg.mlm_head else None
            self.output = OutputProjection(cfg.d_model, vocab_size, bias=cfg.mlm_head)
            if cfg.tie_embeddings != TieEmbeddings.none:
                self.output.weight = self.src_embed.tokens.weight
            return
        self.tgt_embed = make_embeddings()
        self.decoder = make_stack(StackName.decoder, cfg.decoder_layers, lambda: DecoderLayer(cfg, not self.is_lm))
        self.output = OutputProjection(cfg.d_model, vocab_size)
        if cfg.tie_embeddings != TieEmbeddings.none:
            self.output.weight = self.tgt_embed.tokens.weight
        if not self.is_lm:
            self.src_embed = make_embeddings()
            if cfg.tie_embeddings == TieEmbeddings.all:
                self.src_embed.tokens.weight = self.tgt_embed.tokens.weight
            self.encoder = make_stack(StackName.encoder, cfg.encoder_layers, lambda: EncoderLayer(cfg))

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """src (B, S) → memory (B, S, D) and its mask (B, 1, 1, S), True at real tokens."""
        mask = (src != self.pad_id)[:, None, None, :]
        return self.encoder(self.src_embed(src), mask), mask

    def decode(
        self,
        tgt_in: Tensor,  # (B, T)
        memory: Optional[Tensor] = None,
        memory_mask: Optional[Tensor] = None,
        caches: Optional[list[LayerCache]] = None,
        start: int = 0,  # position of tgt_in[:, 0]; > 0 only when decoding step by step with caches
        project: bool = True,
    ) -> Tensor:
        x = self.tgt_embed(tgt_in, start)
        x = self.decoder(x, memory, memory_mask, caches=caches)
        return self.output(x) if project else x  # (B, T, V), or (B, T, D)

    def forward(self, src: Optional[Tensor], tgt_in: Tensor, project: bool = True) -> Tensor:
        """Teacher-forced logits (B, T, V); `src` is None for a language model. An encoder-only model reads `tgt_in`
        (masked tokens) bidirectionally and gives logits at every position; a classifier, class logits (B, C); a
        regression, a number each (B,). `project=False`: the states the output projection reads, (B, T, D), so that
        the training loss can compile the projection with its cross-entropy (a head's outputs as they are)."""
        if self.is_encoder_only:
            memory, mask = self.encode(tgt_in)  # (B, T, D), (B, 1, 1, T)
            if self.is_classifier:
                return self.head(memory, mask[:, 0, 0])  # (B, C), or a regression's (B,)
            if self.output_transform is not None:
                memory = self.output_transform(memory)
            return self.output(memory) if project else memory  # (B, T, V), or (B, T, D)
        if self.is_lm:
            return self.decode(tgt_in, project=project)
        memory, mask = self.encode(src)
        # cast once for every layer's cross-attention
        return self.decode(tgt_in, in_compute_dtype(memory), mask, project=project)

    def new_caches(self) -> list[LayerCache]:
        return [{} for _ in self.decoder.layers]
