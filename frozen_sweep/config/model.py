"""The model group's schema: the transformer's sizes and variants."""

from dataclasses import dataclass
from enum import Enum

from omegaconf import MISSING


class NormPosition(Enum):
    post = "post"  # the original transformer and the paper: x = LN(x + f(x))
    pre = "pre"  # x = x + f(LN(x)), plus a final LN per stack


class Activation(Enum):
    relu = "relu"
    gelu = "gelu"


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
