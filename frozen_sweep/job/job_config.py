"""From a composed config and its command-line overrides to the config a job runs, checked (its fingerprint:
frozen_sweep.job.fingerprint).

One path for a single job (frozen_sweep.job.runner) and for every job of a sweep before any starts (the launchers' plan):
budgets resolved, unknown keys rejected, the relearn base adopted, cross-field checks, data files checked. No torch
here: Hydra's plugin scan imports the launchers, and they import this.
"""

import copy
import dataclasses
import difflib
import os
from pathlib import Path
from typing import Optional

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from frozen_sweep.config import (
    BASE_KEYS,
    BASE_PREFIX,
    Config,
    SCRATCH,
    ConfigError,
    FreezeFrom,
    FrozenMode,
    ResetParts,
    ScratchModel,
    StudyName,
    TaskKind,
)  # fmt: skip
from frozen_sweep.config.keys import override_key
from frozen_sweep.config.checks import validate
from frozen_sweep.config.stack_layout import parse_reset_layer
from frozen_sweep.metrics.sinks import check_installed
from frozen_sweep.run.base_run import BaseRunError, load_base_run

ADOPTED = ("task", "model", "freeze", "reservoir")  # a relearn job takes these from its base run
FINETUNE_ADOPTED = ("model", "reservoir")  # a fine-tuning job takes these from its base run, and its vocabulary
BUDGETS = ("max_epochs", "max_steps", "max_time_s")  # trainer keys; a run stops at the first one reached
PATH_KEYS = ("task.path", "task.sword_dir", "task.cache_dir", "relearn.base_checkpoint", "finetune.base_checkpoint")
PATH_NAMES = frozenset({SCRATCH})  # values of PATH_KEYS that are no paths


def job_config(cfg: DictConfig, overrides: list[str], copied: bool = False,
               planned_base: Optional[DictConfig] = None) -> DictConfig:  # fmt: skip
    """The config the job runs: a copy of `cfg` with budgets resolved and a relearn or fine-tuning base adopted;
    ConfigError (naming the key, or the file) for an unknown key, a bad value or missing data. `copied`: `cfg` is
    the caller's own copy, changed in place (a sweep's plan, which copies each job's config once). `planned_base`:
    a fine-tuning job's base as a sweep plans it before it has run (its checked config): the job is checked against
    it as it will be against the base run, but for what only the run has (its vocabulary's coverage)."""
    check_known_keys(cfg)
    if planned_base is None:
        check_no_base_reference(cfg)
    cfg = resolve_budgets(cfg if copied else copy.deepcopy(cfg), overrides)
    from frozen_sweep.data.checkpoint_files import is_checkpoint_source  # the data package: not at a plugin scan
    from frozen_sweep.job.pretrained_base import adopt_pretrained_base
    from frozen_sweep.job.pretrained_finetune import adopt_pretrained_finetune_base

    finetune_base = cfg.finetune.base_checkpoint
    if planned_base is not None:
        cfg = adopt_planned_base(cfg, overrides, planned_base)
    elif StudyName(cfg.study) == StudyName.finetune and is_checkpoint_source(finetune_base):
        cfg = adopt_pretrained_finetune_base(cfg, overrides)  # first, as from a run: the model checked is the base's
    elif StudyName(cfg.study) == StudyName.finetune and finetune_base not in (None, SCRATCH):
        cfg = adopt_finetune_base(cfg, overrides)  # first: the model it checks against the task is the base's
    elif finetune_base == SCRATCH:  # nothing pre-trained: frozen, freeze_from and the layer choices change nothing,
        f = cfg.finetune  # so a sweep's copies are one job
        f.frozen, f.freeze_from, f.frozen_layers, f.reinit_top = FrozenMode.keep, FreezeFrom.base, None, 0

    pretrained = cfg.relearn.name != "none" and is_checkpoint_source(cfg.relearn.base_checkpoint)
    if pretrained:  # first, as a fine-tuning base: the model checked against the task is the checkpoint's
        cfg = adopt_pretrained_base(cfg, overrides)
    validate(cfg)
    if cfg.finetune.frozen_layers is not None and "F" not in cfg.finetune.frozen_layers:  # all trained: one job with
        cfg.finetune.frozen_layers = None  # none frozen
    from frozen_sweep.data.hub import check_hub_keys  # the data package: imported once the config is valid
    from frozen_sweep.data.tsv_columns import check_columns

    check_columns(cfg.task)  # column keys against each TSV file's header: two lines a file
    check_hub_keys(cfg.task)  # a hub dataset's source and split keys (no `datasets` import, no download)
    check_installed(cfg.trainer.loggers)
    if pretrained:
        cfg.relearn.reset_layer = layer_of(cfg.relearn, cfg.model)
    elif cfg.relearn.name != "none":
        cfg.relearn.reset_layer = check_reset_layer(cfg.relearn)
        cfg = adopt_base(cfg, overrides)
    return cfg


def base_reference(cfg: DictConfig) -> tuple[Optional[str], Optional[str]]:
    """(key, NAME) when a base key of the config holds bases.NAME (one of its bases, not a directory), else
    (None, None)."""
    for key in BASE_KEYS:
        value = OmegaConf.select(cfg, key)
        if isinstance(value, str) and value.startswith(BASE_PREFIX):
            return key, value.removeprefix(BASE_PREFIX)
    return None, None


def check_no_base_reference(cfg: DictConfig) -> None:
    """`bases.NAME` is resolved by a sweep's launcher, which trains the base first; a single job cannot. Nor can it
    size a scratch job by the bases (sized_by_bases)."""
    key, name = base_reference(cfg)
    if key is not None:
        raise ConfigError(
            f"{key}={BASE_PREFIX}{name}: a base that a sweep trains first (its overrides in the config's "
            f"{BASE_PREFIX}{name}); run the command with -m, or give the base run's directory"
        )
    if sized_by_bases(cfg):
        raise ConfigError(
            f"finetune.base_checkpoint={SCRATCH} with finetune.scratch_model=bases: the baseline takes the model of "
            "the config's bases, which a sweep reads from their configs; run the command with -m, or set "
            "finetune.scratch_model=own for the job's own model"
        )


def sized_by_bases(cfg: DictConfig) -> bool:
    """A scratch fine-tuning job of a config with `bases` whose model is theirs (finetune.scratch_model=bases): a
    sweep's launcher gives it the bases' model before any job starts, so that the baseline is sized like them."""
    f = cfg.finetune
    return (StudyName(cfg.study) == StudyName.finetune and f.base_checkpoint == SCRATCH
            and ScratchModel(f.scratch_model) == ScratchModel.bases and bool(cfg.get("bases")))  # fmt: skip


def adopt_finetune_base(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """The fine-tuning job's config with its base run's model and reservoirs, and task.vocab its base's vocabulary;
    ConfigError unless the base is a completed masked-LM run whose vocabulary file is still there."""
    f = cfg.finetune
    refuse_adopted_overrides(overrides, f.base_checkpoint)
    try:
        base = load_base_run(f.base_checkpoint)
    except BaseRunError as e:
        raise ConfigError(f"finetune.base_checkpoint={f.base_checkpoint}: {e}") from e
    check_base_kind(base.config, f.base_checkpoint)
    vocab = (base.record.get("data") or {}).get("vocab_path")
    if not vocab or not Path(vocab).is_file():
        raise ConfigError(
            f"finetune.base_checkpoint={f.base_checkpoint}: its vocabulary ({vocab}) is gone from the cache; prepare "
            f"its task again (python -m frozen_sweep.prepare task={base.config.task.name} ...) to restore it"
        )
    adopted = OmegaConf.merge(cfg, {key: base.config[key] for key in FINETUNE_ADOPTED if key in base.config})
    adopted.task.vocab = vocab
    if base.record.get("params_trainable") == base.record.get("params_total"):  # nothing frozen to keep or train: a
        adopted.finetune.frozen = FrozenMode.keep  # sweep's keep and train copies are one job (counted once)
    return adopted


def adopt_planned_base(cfg: DictConfig, overrides: list[str], base: DictConfig) -> DictConfig:
    """The fine-tuning job's config with its planned base's model and reservoirs: what adopt_finetune_base will give
    it once the base has run, checked before (the vocabulary stays the job's own until then)."""
    reference = cfg.finetune.base_checkpoint
    refuse_adopted_overrides(overrides, reference)
    check_base_kind(base, reference)
    return OmegaConf.merge(cfg, {key: base[key] for key in FINETUNE_ADOPTED if key in base})


def refuse_adopted_overrides(overrides: list[str], base_checkpoint: str) -> None:
    own = [o for o in overrides if override_key(o).split(".")[0] in FINETUNE_ADOPTED]
    if own:
        raise ConfigError(
            f"{' '.join(own)}: a fine-tuning job takes model and reservoir from its base run "
            f"(finetune.base_checkpoint={base_checkpoint}); drop these overrides"
        )


def check_base_kind(base: DictConfig, base_checkpoint: str) -> None:
    kind = base.task.kind
    kind = kind.value if isinstance(kind, TaskKind) else kind
    if kind != TaskKind.mlm.value:
        raise ConfigError(
            f"finetune.base_checkpoint={base_checkpoint}: a task.kind={kind} run (task={base.task.name}); "
            "fine-tuning starts from a masked LM's encoder (task.kind=mlm, e.g. task=mlm_bible_en)"
        )


def check_reset_layer(r) -> str:
    """A relearn job needs a completed base run, and a layer and parts that its model has: read from disk here, so
    that a bad base fails before any job starts. Returns the layer counted from 0 (encoder.-1 of 2 → encoder.1): the
    same layer named either way is the same job."""
    try:
        base = load_base_run(r.base_checkpoint)
    except BaseRunError as e:
        raise ConfigError(f"relearn.base_checkpoint={r.base_checkpoint}: {e}") from e
    return layer_of(r, base.config.model)


def layer_of(r, model) -> str:
    """relearn.reset_layer counted from 0, checked against the base's `model` config (ConfigError naming what it
    allows)."""
    stack, index = parse_reset_layer(r.reset_layer)
    layers = {"encoder": model.encoder_layers, "decoder": model.decoder_layers}[stack]
    if not -layers <= index < layers:
        allowed = f"{stack}.0 … {stack}.{layers - 1} (or -1 … -{layers})" if layers else f"none: it has no {stack}"
        raise ConfigError(
            f"relearn.reset_layer={r.reset_layer}: the base model ({model.name}, {model.encoder_layers} encoder + "
            f"{model.decoder_layers} decoder layers) allows {allowed}"
        )
    if ResetParts(r.reset_parts) == ResetParts.cross_att and (stack != "decoder" or not model.encoder_layers):
        raise ConfigError(
            f"relearn.reset_parts=cross_att: only decoder layers of an encoder–decoder model have cross-attention "
            f"(reset_layer={r.reset_layer}); allowed: all, att, ffn, norms"
        )
    return f"{stack}.{index % layers}"


def absolute_paths(cfg: DictConfig, base: Path) -> None:
    """Make the config's relative paths (PATH_KEYS) absolute against `base`, the directory the command ran in
    (Hydra's runtime.cwd): the sweep's check before any job starts and every job then read the same files, wherever
    the job runs (hydra.job.chdir=true runs it in its own directory)."""
    from frozen_sweep.data.checkpoint_files import is_hub_name

    for key in PATH_KEYS:
        value = OmegaConf.select(cfg, key)
        if not isinstance(value, str) or not value or value in PATH_NAMES or value.startswith(BASE_PREFIX):
            continue
        if key in BASE_KEYS and is_hub_name(value):  # a pretrained checkpoint's name, no path
            continue
        if not Path(value).expanduser().is_absolute():
            with read_write(cfg), open_dict(cfg):
                OmegaConf.update(cfg, key, os.path.normpath(Path(base, value)))


def adopt_base(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """The relearn job's config with the base run's task, model, freeze pattern and reservoirs (when its config has
    them); this machine's task.cache_dir is kept."""
    own = [o for o in overrides if override_key(o).split(".")[0] in ADOPTED and override_key(o) != "task.cache_dir"]
    if own:
        raise ConfigError(
            f"{' '.join(own)}: a relearn job takes task, model, freeze and reservoir from its base run "
            f"(relearn.base_checkpoint={cfg.relearn.base_checkpoint}); drop these overrides"
        )
    base = load_base_run(cfg.relearn.base_checkpoint).config
    adopted = OmegaConf.merge(cfg, {key: base[key] for key in ADOPTED if key in base})
    adopted.task.cache_dir = cfg.task.cache_dir
    return adopted


def resolve_budgets(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """(In place.) Budgets named on the command line replace the configured ones: `trainer.max_steps=400` gives 400 steps, not
    "400 steps unless the preset's time budget or epoch cap comes first". Budgets not named there become null."""
    given = {override_key(o).removeprefix("trainer.") for o in overrides} & set(BUDGETS)
    if given:
        with open_dict(cfg):
            for budget in set(BUDGETS) - given:
                cfg.trainer[budget] = None
    return cfg


def check_known_keys(node, path: str = "") -> None:
    """Reject keys the schema does not know: Hydra's `+key=value` appends them even to a typed node. The top level is
    the Config schema's even when the node lost its type (a plan's copy without the hydra node)."""
    schema = OmegaConf.get_type(node) if path else Config
    if dataclasses.is_dataclass(schema):
        known = {f.name for f in dataclasses.fields(schema)}
        unknown = [key for key in node if key not in known and not (path == "" and key == "hydra")]
        if unknown:
            close = difflib.get_close_matches(unknown[0], known, n=3)
            hint = f"did you mean {' or '.join(path + c for c in close)}? " if close else ""
            where = path.rstrip(".") or "the top level"
            raise ConfigError(
                f"{path}{unknown[0]}: no such key in the config; {hint}allowed under {where}: {', '.join(sorted(known))}"
            )
    if isinstance(node, DictConfig):
        for key in node:
            if path == "" and key == "hydra":  # Hydra's own node: Hydra checks it
                continue
            child = node._get_node(key)
            if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
                check_known_keys(child, f"{path}{key}.")
