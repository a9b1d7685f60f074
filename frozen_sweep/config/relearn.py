"""The relearn group's schema: reset one layer of a finished run and train it alone."""

from dataclasses import dataclass, field
from enum import Enum
from typing import List, Optional

from frozen_sweep.config.freeze import Init


class ResetParts(Enum):
    all = "all"  # the whole layer: self-attention, cross-attention, FFN and their layer norms
    att = "att"  # self-attention
    ffn = "ffn"
    cross_att = "cross_att"  # cross-attention (decoder layers of an encoder–decoder model)
    norms = "norms"  # the layer norms


@dataclass
class RelearnConfig:
    name: str = "none"  # none: an ordinary job; layer: reset one layer of a finished run and train it alone
    base_checkpoint: Optional[str] = None  # the finished run's directory (result.json, config.yaml, checkpoint_best.pt)
    reset_layer: Optional[str] = None  # "encoder.<i>" or "decoder.<i>", 0-based; negative from the last (-1)
    reset_parts: ResetParts = ResetParts.all
    reset_init: Init = Init.random
    train_neighbours: bool = False  # also train (without resetting) the layers just below and above, same stack
    thresholds: List[float] = field(default_factory=lambda: [0.01, 0.05])  # "recovered within x" of pre-reset
