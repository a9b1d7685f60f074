"""The reservoir group's schema: frozen random layers among the trainable ones."""

from dataclasses import dataclass, field
from enum import Enum
from typing import Optional

from frozen_sweep.config.freeze import Init


class ReservoirType(Enum):
    transformer = "transformer"  # a full layer of the stack it sits in, all of it frozen
    ffn = "ffn"  # x + FFN(LN(x)): no attention
    bigru = "bigru"  # x + BiGRU(LN(x)), hidden d/2 per direction (encoder only: it reads the future)
    conv = "conv"  # x + ReLU(Conv1d(LN(x))) over time, same padding (encoder only: it reads the future)


class Placement(Enum):
    interleave = "interleave"  # alternating and centred: 7 layers, 3 reservoirs = LRLRLRL; 2 = LLRLRLL
    bottom = "bottom"  # the first `count` layers
    top = "top"  # the last `count` layers
    pattern = "pattern"  # `pattern`, one letter per layer


class StackName(Enum):
    encoder = "encoder"
    decoder = "decoder"  # a language model's only stack


# read with placement=pattern only (frozen_sweep.config.keys refuses it otherwise, saying what to write)
PATTERN_ONLY = {"read_when": {"placement": "pattern"}, "instead": "reservoir.placement=pattern reservoir.pattern=…"}


@dataclass
class ReservoirConfig:
    """Frozen random layers among the trainable ones (Shen et al. 2021). `count` of the stack's layers (the model's
    encoder_layers or decoder_layers, reservoirs included) become reservoirs of `type`, placed by `placement`."""

    name: str = "none"
    type: ReservoirType = ReservoirType.transformer
    count: int = 0
    placement: Placement = Placement.interleave
    # placement=pattern: L trainable, R reservoir, e.g. LRLRLRL
    pattern: Optional[str] = field(default=None, metadata=PATTERN_ONLY)
    stack: StackName = StackName.encoder
    init: Init = Init.orthogonal  # weight matrices; biases and norms get PyTorch's defaults
    backskip: bool = False  # skip the reservoirs' backward pass: their Jacobian is taken as the identity
    # type=conv: odd kernel width; not refused elsewhere: a sweep over reservoir types sets it for every row
    conv_kernel: int = 3
