"""Load a finished run directory for analysis or to build on: its typed config, record, model and checkpoint.

A run's config.yaml is plain YAML: loaded with OmegaConf.load, enums come back as strings and the model builder
reads `tie_embeddings == TieEmbeddings.all` as false. `typed_config` merges it into the schema instead, so every
value comes back as the type the job had.
"""

from dataclasses import dataclass
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from frozen_sweep.config import SCRATCH, Config, FreezeFrom, FrozenMode, StudyName
from frozen_sweep.model import Transformer, component_of_parameters
from frozen_sweep.run.base_run import load_base_run
from frozen_sweep.run.directory import BEST_CHECKPOINT, CONFIG_FILE
from frozen_sweep.weights.build import build_model
from frozen_sweep.weights.checkpoint import load_checkpoint


def typed_config(path) -> DictConfig:
    """A saved config.yaml with the schema's types: enums restored, keys and values checked."""
    return OmegaConf.merge(OmegaConf.structured(Config), OmegaConf.load(path))


@dataclass
class FinishedRun:
    path: Path
    config: DictConfig  # typed: the config the job ran with
    record: dict  # its result.json
    model: Transformer  # on the CPU, with the checkpoint's weights (its frozen parameters regenerated and verified)
    checkpoint: dict  # the checkpoint's other entries (optimiser state etc., for checkpoint_last.pt)


def load_run(path, checkpoint: str = BEST_CHECKPOINT) -> FinishedRun:
    """The completed run in `path` with the weights of `checkpoint` (default: its best validation's);
    BaseRunError saying why when `path` is not a completed run. A fine-tuned run's frozen parameters come from its
    base run, loaded (and verified) first."""
    run = load_base_run(path)
    config = typed_config(run.path / CONFIG_FILE)
    data = run.record["data"]
    num_classes = len(data["labels"]) if "labels" in data else None
    base = config.finetune.base_checkpoint
    if StudyName(config.study) == StudyName.finetune and base != SCRATCH:
        model = fine_tuned_model(config, load_run(base), num_classes)
    else:
        model = build_model(config, data["vocab_size"], num_classes)
    extra = load_checkpoint(run.path / checkpoint, model)
    return FinishedRun(run.path, config, run.record, model, extra)


def fine_tuned_model(cfg, base: FinishedRun, num_classes: int) -> Transformer:
    """A study=finetune job's classifier: the model of `cfg` (the base's encoder shape and reservoirs, the job's seed)
    with every parameter but the head's copied from the base run's model, and with finetune.freeze_from=seed but
    the ones the job's freeze pattern freezes (drawn from the job's seed, with the pattern's init). Frozen: the job's
    freeze pattern's components, and with finetune.frozen=keep whatever the base kept frozen (its frozen components,
    its reservoir layers) — so a checkpoint stays seed-only: its frozen parameters are the base's (regenerated from the
    base's seed and checkpoint) or the job seed's."""
    model = build_model(cfg, base.record["data"]["vocab_size"], num_classes)
    base_params = dict(base.model.named_parameters())
    keep, from_seed = FrozenMode(cfg.finetune.frozen) == FrozenMode.keep, cfg.finetune.freeze_from == FreezeFrom.seed
    components = component_of_parameters(model)
    with torch.no_grad():
        for name, param in model.named_parameters():
            component = components[name]
            if component == "head" or (from_seed and cfg.freeze[component].frozen):  # the job's draw, as built
                continue
            source = base_params[name]  # the same encoder: job_config adopted the base's model and reservoirs
            param.copy_(source)
            param.requires_grad_(not (cfg.freeze[component].frozen or (keep and not source.requires_grad)))
    return model
