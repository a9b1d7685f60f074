"""A fine-tuning job whose base is a pretrained checkpoint (finetune.base_checkpoint= a directory saved by
`save_pretrained`, or a hub name): an encoder (BertForMaskedLM, RobertaForMaskedLM) fine-tuned on a classification or
regression task, or any checkpoint trained on its own objective (a masked LM's or a language model's corpus: the
freeze study from a pretrained start). Its config adopts the checkpoint's model and reads its task with the
checkpoint's own tokenizer (task.vocab); its identity holds the checkpoint's commit and files'
hashes (frozen_sweep.job.pretrained_base.checkpoint_identity). The weights are read by the job
(frozen_sweep.study.finetune).
"""

from omegaconf import DictConfig, OmegaConf

from frozen_sweep.config import ConfigError, TaskKind
from frozen_sweep.job.pretrained_base import adopted_checkpoint_model

FINETUNE_ADOPTED = ("model", "reservoir")  # from the checkpoint: its model, no reservoir (the freeze pattern: the job's)


def adopt_pretrained_finetune_base(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """The fine-tuning job's config with the checkpoint's model and task.vocab the checkpoint; its own task is a
    classification or regression (an encoder's), or the checkpoint's own objective."""
    source = cfg.finetune.base_checkpoint
    model, architecture = adopted_checkpoint_model(cfg, overrides, "finetune.base_checkpoint", FINETUNE_ADOPTED,
                                                   "a fine-tuning job")  # fmt: skip
    kind, decoder = TaskKind(cfg.task.kind), bool(model.decoder_layers)
    own_objective = TaskKind.lm if decoder else TaskKind.mlm
    if decoder and kind.labelled:
        raise ConfigError(f"finetune.base_checkpoint={source}: {architecture} is a decoder; a classification or "
                          "regression task fine-tunes an encoder (BertForMaskedLM, RobertaForMaskedLM)")  # fmt: skip
    if not kind.labelled and kind != own_objective:
        raise ConfigError(f"task={cfg.task.name} is task.kind={kind.value}: {architecture} is fine-tuned on a "
                          f"classification or regression task{'' if decoder else ' (e.g. task=glue_sst2)'}, or on "
                          f"its own objective (task.kind={own_objective.value})")  # fmt: skip
    adopted = OmegaConf.merge(cfg, {"model": model})
    adopted.task.vocab = source
    return adopted
