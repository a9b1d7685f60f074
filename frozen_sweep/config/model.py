"""The model group's schema: the transformer's sizes and variants."""

from dataclasses import dataclass
from enum import Enum
from typing import Optional

from omegaconf import MISSING


class NormPosition(Enum):
    """Where the norms sit, and which norm: LayerNorm after or before each sublayer, or LLaMA's RMSNorm before."""

    post = "post"  # the original transformer and the paper: x = LN(x + f(x))
    pre = "pre"  # x = x + f(LN(x)), plus a final LN per stack
    rms = "rms"  # x = x + f(RMSNorm(x)), plus a final RMSNorm per stack (LLaMA)


class Activation(Enum):
    relu = "relu"
    gelu = "gelu"


class FfnKind(Enum):
    mlp = "mlp"  # fc2(act(fc1(x))), act = model.activation (the paper)
    swiglu = "swiglu"  # down(silu(gate(x)) * up(x)), ffn_dim = the gate's and up's width (LLaMA's intermediate_size)


class Positions(Enum):
    sinusoidal = "sinusoidal"  # the fixed table added to sqrt(d)-scaled token embeddings (the paper)
    rope = "rope"  # rotary: queries and keys of self-attention rotated by position; embeddings not scaled (LLaMA)
    learned = "learned"  # a trained table of position embeddings added to the unscaled token embeddings (BERT)


class Pooling(Enum):
    """What a classification or regression head reads of the encoder's states."""

    first = "first"  # the first token's state, bos (RoBERTa's, fairseq's sentence_prediction)
    mean = "mean"  # the mean over the example's tokens (padding left out)


class TieEmbeddings(Enum):
    all = "all"  # source embedding = target embedding = output projection (the paper)
    decoder = "decoder"  # target embedding = output projection
    none = "none"


@dataclass
class ModelConfig:
    name: str = MISSING
    encoder_layers: int = 6  # 0 for a decoder-only language model
    decoder_layers: int = 6  # 0 for an encoder-only masked language model
    d_model: int = 512
    ffn_dim: int = 2048
    heads: int = 8
    norm: NormPosition = NormPosition.post
    activation: Activation = Activation.relu
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    tie_embeddings: TieEmbeddings = TieEmbeddings.all
    max_positions: int = 1024
    pooling: Pooling = Pooling.first  # task.kind=classify or regression: what the head reads
    # LLaMA-style options (docs/concepts.md); their defaults are the paper's transformer
    ffn: FfnKind = FfnKind.mlp
    positions: Positions = Positions.sinusoidal
    rope_base: float = 10000.0  # positions=rope: the rotation frequencies are rope_base^(-2i/head_dim)
    kv_heads: Optional[int] = None  # key/value heads, each shared by heads/kv_heads query heads (GQA); null: = heads
    bias: bool = True  # biases in attention and FFN projections (LLaMA has none)
    qkv_bias: bool = False  # biases in the query, key and value projections even with bias=false (Qwen2)
    rope_fraction: float = 1.0  # positions=rope: the share of a head's dimensions rotated, the first (GPT-NeoX: 0.25)
    parallel: bool = False  # a language model's attention and FFN read the same input, both added to it (GPT-NeoX)
    # BERT-style options (docs/concepts.md)
    position_offset: int = 0  # positions=learned: the table's row of the first position (RoBERTa: 2)
    token_types: int = 0  # rows of a token-type table whose first row is added to every token (BERT: 2); 0: none
    embed_norm: bool = False  # a LayerNorm on the embeddings, before dropout (BERT)
    mlm_head: bool = False  # a masked LM's output reads dense → GELU → LayerNorm first, and adds a bias (BERT)
    norm_eps: float = 1e-5  # the norms' epsilon (LayerNorm's default; LLaMA's RMSNorm uses 1e-6 or 1e-5)
