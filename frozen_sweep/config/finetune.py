"""The finetune settings' schema: fine-tune a finished masked-LM run's encoder on a classification task
(frozen_sweep/study/finetune.py)."""

from dataclasses import dataclass, field
from enum import Enum
from typing import List, Optional

SCRATCH = "scratch"  # finetune.base_checkpoint=scratch: no pre-training, the baseline of a fine-tuning table


class FrozenMode(Enum):
    keep = "keep"  # the base's frozen components and reservoir layers stay frozen
    train = "train"  # they train too, from their frozen values


@dataclass
class FinetuneConfig:
    # study=finetune: a completed masked-LM run's directory (result.json, config.yaml, checkpoint_best.pt), or scratch
    base_checkpoint: Optional[str] = None
    frozen: FrozenMode = FrozenMode.keep
    # components re-drawn from the job's seed (their freeze init) instead of taken from the base, e.g. [emb]
    redraw: List[str] = field(default_factory=list)
    max_unk_rate: float = 0.01  # the base's vocabulary must cover the task: at most this fraction of <unk> pieces
