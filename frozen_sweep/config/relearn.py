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


# read by a relearn job only (frozen_sweep.config.keys refuses them otherwise, saying what to write)
LAYER_ONLY = {"read_when": {"name": "layer"},
              "instead": "relearn=layer relearn.base_checkpoint=DIR relearn.reset_layer=encoder.<i>|decoder.<i>"}


@dataclass
class RelearnConfig:
    name: str = "none"  # none: an ordinary job; layer: reset one layer of a finished run and train it alone
    # the finished run's directory (result.json, config.yaml, checkpoint_best.pt), or a pretrained decoder: a
    # directory saved by save_pretrained or a hub name (frozen_sweep.job.pretrained_base)
    base_checkpoint: Optional[str] = field(default=None, metadata=LAYER_ONLY)
    # "encoder.<i>" or "decoder.<i>", 0-based; -1 the last
    reset_layer: Optional[str] = field(default=None, metadata=LAYER_ONLY)
    reset_parts: ResetParts = field(default=ResetParts.all, metadata=LAYER_ONLY)
    reset_init: Init = field(default=Init.random, metadata=LAYER_ONLY)
    # also train (without resetting) the layers just below and above, same stack
    train_neighbours: bool = field(default=False, metadata=LAYER_ONLY)
    # "recovered within x" of pre-reset
    thresholds: List[float] = field(default_factory=lambda: [0.01, 0.05], metadata=LAYER_ONLY)
