"""Load a finished run for analysis, to build on or to use: from its directory, or from the model file that
`python -m frozen_sweep.export` wrote (frozen_sweep.weights.model_file). Every command that uses a run goes through
`load_run`, so each accepts both.

A run's config.yaml is plain YAML: loaded with OmegaConf.load, enums come back as strings and the model builder
reads `tie_embeddings == TieEmbeddings.all` as false. `typed_config` merges it into the schema instead, so every
value comes back as the type the job had.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import torch
from omegaconf import DictConfig, OmegaConf

from frozen_sweep.config import SCRATCH, Config, FreezeFrom, FrozenMode, StudyName
from frozen_sweep.data.vocab import Vocab
from frozen_sweep.model import Transformer, component_of_parameters
from frozen_sweep.run.base_run import BaseRunError, load_base_run
from frozen_sweep.run.directory import BEST_CHECKPOINT, CONFIG_FILE
from frozen_sweep.weights.build import FROZEN_MODES, build_model, build_model_on_the_fly
from frozen_sweep.weights.checkpoint import load_checkpoint, restore
from frozen_sweep.weights.freeze import frozen_fingerprint
from frozen_sweep.weights.model_file import read_model_file
from frozen_sweep.weights.on_the_fly import OnTheFly


def typed_config(path) -> DictConfig:
    """A saved config.yaml with the schema's types: enums restored, keys and values checked."""
    return _typed(OmegaConf.load(path))


def _typed(cfg) -> DictConfig:
    return OmegaConf.merge(OmegaConf.structured(Config), cfg)


@dataclass
class FinishedRun:
    path: Path  # the run's directory, or its model file
    config: DictConfig  # typed: the config the job ran with
    record: Optional[dict]  # its result.json; None for a model file, which holds no record
    model: Transformer  # on the CPU, with the checkpoint's weights (its frozen parameters regenerated and verified)
    checkpoint: dict  # the checkpoint's other entries (optimiser state etc., for checkpoint_last.pt)
    load_vocab: Callable[[], Vocab] = field(repr=False)
    on_the_fly: Optional[OnTheFly] = None  # with frozen="on-the-fly": the hooks that draw the frozen weights
    labels: Optional[list[str]] = None  # a classifier's label names, by class id

    @property
    def vocab(self) -> Vocab:
        """The run's subword vocabulary (a run directory's from its prepared data, a model file's from itself)."""
        return self.load_vocab()


def load_run(path, checkpoint: str = BEST_CHECKPOINT, frozen: str = "resident") -> FinishedRun:
    """The completed run in directory `path` with the weights of `checkpoint` (default: its best validation's), or
    the run in model file `path`; its frozen weights `resident` or drawn `on-the-fly`. BaseRunError saying why when
    `path` is neither; CheckpointError naming the tensor when a frozen one does not regenerate to its hash. A
    fine-tuned run's frozen parameters come from its base run, loaded (and verified) first."""
    if frozen not in FROZEN_MODES:
        raise ValueError(f"frozen={frozen!r}: allowed: {', '.join(FROZEN_MODES)}")
    path = Path(path).expanduser().absolute()
    if path.is_file():
        saved = read_model_file(path)
        config = _typed(OmegaConf.create(saved.config_yaml))
        if saved.seed != config.seed:
            raise BaseRunError(f"{path}: its seed {saved.seed} is not its config's seed {config.seed}")
        model, hooks = _build(config, len(saved.vocab), frozen, None)  # a model file holds no classifier
        fingerprint = hooks.fingerprint if hooks else frozen_fingerprint
        restore(path, model, saved.trainable, saved.frozen_sha256, fingerprint(model))
        return FinishedRun(path, config, None, model, {}, lambda: saved.vocab, hooks)
    run = load_base_run(path)
    config = typed_config(run.path / CONFIG_FILE)
    data = run.record["data"]
    labels = data.get("labels")
    if is_fine_tuned(config):
        if frozen != "resident":
            raise BaseRunError(
                f"{path}: a fine-tuned run's frozen weights come from its base run, not from a seed alone: "
                "only --frozen resident"
            )
        model, hooks = fine_tuned_model(config, load_run(config.finetune.base_checkpoint), len(labels)), None
    else:
        model, hooks = _build(config, data["vocab_size"], frozen, len(labels) if labels else None)
    fingerprint = hooks.fingerprint if hooks else frozen_fingerprint
    extra = load_checkpoint(run.path / checkpoint, model, fingerprint=fingerprint)
    vocab = lambda: _prepared_vocab(run.path, run.record)  # noqa: E731
    return FinishedRun(run.path, config, run.record, model, extra, vocab, hooks, labels)


def is_fine_tuned(config) -> bool:
    """A study=finetune run started from a base run (not from scratch): its frozen weights are the base's."""
    return StudyName(config.study) == StudyName.finetune and config.finetune.base_checkpoint != SCRATCH


def _build(config, vocab_size: int, frozen: str, num_classes: Optional[int]) -> tuple[Transformer, Optional[OnTheFly]]:
    if frozen == "on-the-fly":
        return build_model_on_the_fly(config, vocab_size, num_classes)
    return build_model(config, vocab_size, num_classes), None


def _prepared_vocab(run_dir: Path, record: dict) -> Vocab:
    path = Path(record["data"]["vocab_path"])
    if not path.is_file():
        raise BaseRunError(
            f"the vocabulary of the run in {run_dir} ({path}) is gone with its prepared data: prepare the task again "
            f"(python -m frozen_sweep.prepare with the run's task settings), or use a model file exported while it "
            f"was there"
        )
    return Vocab.load(path)


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
