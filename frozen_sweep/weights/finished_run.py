"""Load a finished run directory for analysis or to build on: its typed config, record, model and checkpoint.

A run's config.yaml is plain YAML: loaded with OmegaConf.load, enums come back as strings and the model builder
reads `tie_embeddings == TieEmbeddings.all` as false. `typed_config` merges it into the schema instead, so every
value comes back as the type the job had.
"""

from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from frozen_sweep.config import Config
from frozen_sweep.model import Transformer
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
    BaseRunError saying why when `path` is not a completed run."""
    run = load_base_run(path)
    config = typed_config(run.path / CONFIG_FILE)
    model = build_model(config, run.record["data"]["vocab_size"])
    extra = load_checkpoint(run.path / checkpoint, model)
    return FinishedRun(run.path, config, run.record, model, extra)
