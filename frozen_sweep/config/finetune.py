"""The finetune settings' schema: fine-tune a finished masked-LM run's encoder, or a pretrained checkpoint's, on a
classification task (frozen_sweep/study/finetune.py)."""

from dataclasses import dataclass
from enum import Enum
from typing import Optional

SCRATCH = "scratch"  # finetune.base_checkpoint=scratch: no pre-training, the baseline of a fine-tuning table


class FreezeFrom(Enum):
    base = "base"  # the job's freeze pattern freezes the pre-trained values (e.g. the base's embeddings)
    seed = "seed"  # it re-draws them from the job's seed first, with its init: frozen at random, as without a base


class FrozenMode(Enum):
    keep = "keep"  # the base's frozen components and reservoir layers stay frozen
    train = "train"  # they train too, from their frozen values


class ScratchModel(Enum):
    bases = "bases"  # the scratch row is the bases' model (the config's `bases`, all of one model), sized like them
    own = "own"  # the job's own `model` config (its preset, e.g. model=mlm_demo, and model.* keys)


@dataclass
class FinetuneConfig:
    # study=finetune: a completed masked-LM run's directory (result.json, config.yaml, checkpoint_best.pt), a pretrained
    # checkpoint (a directory written by save_pretrained, or a hub name: BertForMaskedLM, RobertaForMaskedLM, or a
    # decoder on its own objective), or scratch
    base_checkpoint: Optional[str] = None
    frozen: FrozenMode = FrozenMode.keep
    # where the components the job's freeze pattern freezes take their values: the base's or a fresh random draw
    freeze_from: FreezeFrom = FreezeFrom.base
    max_unk_rate: float = 0.01  # the base's vocabulary must cover the task: at most this fraction of <unk> pieces
    # finetune.base_checkpoint=scratch in a config with `bases`: whose model the baseline trains (a sweep's launcher
    # takes the bases' from their configs before any job starts)
    scratch_model: ScratchModel = ScratchModel.bases
    # the base's layers, one letter each from the bottom: F frozen at the base's values, T trained; null: none frozen
    frozen_layers: Optional[str] = None
    reinit_top: int = 0  # the top N layers re-drawn from the job's seed, as few-sample fine-tuning re-initialises them
