"""From a composed config and its command-line overrides to the config a job runs, checked, and its fingerprint.

One path for a single job (frozen_sweep.job) and for every job of a sweep before any starts (the launchers' plan):
budgets resolved, unknown keys rejected, the relearn base adopted, cross-field checks, data files checked. No torch
here: Hydra's plugin scan imports the launchers, and they import this.

The fingerprint is what determines a job's result: its resolved config less config.NEUTRAL_KEYS (where or how it runs,
not what it computes) and DATA_LOCATION_KEYS, plus the identity of its data (a hash of the corpus files' content).
A job directory's result is reused or resumed only by a job with the same fingerprint (frozen_sweep.run_dir).
"""

import copy
import dataclasses
import hashlib
import json
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from frozen_sweep.base_run import load_base_run
from frozen_sweep.config import NEUTRAL_KEYS, ConfigError, CorpusKind, TaskKind
from frozen_sweep.run_dir import flatten
from frozen_sweep.validate import validate

DATA_LOCATION_KEYS = frozenset({"task.path", "task.sword_dir"})  # where the data is: its content is fingerprinted
# `study` only labels the record's table; it stays in directory names (study=freeze and study=reservoir runs never
# share one), and records from before the key existed keep their fingerprint
LABEL_KEYS = frozenset({"study"})
ADOPTED = ("task", "model", "freeze", "reservoir")  # a relearn job takes these from its base run
BUDGETS = ("max_epochs", "max_steps", "max_time_s")  # trainer keys; a run stops at the first one reached


def job_config(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """The config the job runs: a copy of `cfg` with budgets resolved and the relearn base adopted; ConfigError
    (naming the key, or the file) for an unknown key, a bad value or missing data."""
    check_known_keys(cfg)
    cfg = resolve_budgets(cfg, overrides)
    validate(cfg)
    if cfg.relearn.name != "none":
        cfg = adopt_base(cfg, overrides)
    return cfg


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


def override_key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def resolve_budgets(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """Budgets named on the command line replace the configured ones: `trainer.max_steps=400` gives 400 steps, not
    "400 steps unless the preset's time budget or epoch cap comes first". Budgets not named there become null."""
    given = {override_key(o).removeprefix("trainer.") for o in overrides} & set(BUDGETS)
    cfg = copy.deepcopy(cfg)
    if given:
        with open_dict(cfg):
            for budget in set(BUDGETS) - given:
                cfg.trainer[budget] = None
    return cfg


def check_known_keys(node, path: str = "") -> None:
    """Reject keys the schema does not know: Hydra's `+key=value` appends them even to a typed node."""
    schema = OmegaConf.get_type(node)
    if dataclasses.is_dataclass(schema):
        known = {f.name for f in dataclasses.fields(schema)}
        unknown = [key for key in node if key not in known and not (path == "" and key == "hydra")]
        if unknown:
            raise ConfigError(
                f"{path}{unknown[0]}: no such key in the config; allowed under {path.rstrip('.') or 'the top level'}: "
                f"{', '.join(sorted(known))}"
            )
    if isinstance(node, DictConfig):
        for key in node:
            if path == "" and key == "hydra":  # Hydra's own node: Hydra checks it
                continue
            child = node._get_node(key)
            if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
                check_known_keys(child, f"{path}{key}.")


def fingerprint(cfg: DictConfig) -> dict:
    """{"sha256": ..., "config": {dotted key: value}, "data": {file: sha256}}: what determines the job's result."""
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    container.pop("hydra", None)
    neutral = NEUTRAL_KEYS | DATA_LOCATION_KEYS | LABEL_KEYS
    config = {key: value for key, value in flatten(container).items() if key not in neutral}
    data = data_identity(cfg.task)
    digest = hashlib.sha256(json.dumps({"config": config, "data": data}, sort_keys=True).encode()).hexdigest()
    return {"sha256": digest, "config": config, "data": data}


def data_files(task_cfg) -> dict[str, Path]:
    """The files the task reads, by a name that does not depend on where they are; ConfigError for a missing one."""
    monolingual = TaskKind(task_cfg.kind).monolingual
    langs = [task_cfg.tgt_lang] if monolingual else [task_cfg.src_lang, task_cfg.tgt_lang]
    if CorpusKind(task_cfg.corpus) == CorpusKind.text_files:
        directory = Path(task_cfg.path).expanduser()
        files = {f"{split}.{lang}": directory / f"{split}.{lang}" for split in ("train", "valid", "test") for lang in langs}
        missing = [str(path) for path in files.values() if not path.is_file()]
        if missing:
            raise ConfigError(
                f"task.path={task_cfg.path}: missing {', '.join(missing)} (task=text_files reads "
                f"{{train,valid,test}}.{{{','.join(langs)}}} there)"
            )
        return files
    from frozen_sweep.data.bible import module_sources  # the bible reader; imported here to keep torch out

    try:
        sources = module_sources(task_cfg)  # {lang: a shipped verses file, or a SWORD module's directory}
    except (OSError, ValueError) as e:
        raise ConfigError(f"task.sword_dir / task.modules: {e}") from e
    files = {}
    for lang, source in sources.items():
        for f in [source] if source.is_file() else sorted(p for p in source.iterdir() if p.is_file()):
            files[f"{lang}/{source.name}/{f.name}"] = f
    return files


_hashes: dict[tuple, str] = {}  # (path, size, mtime) → sha256: a sweep's jobs share their corpus


def file_sha256(path: Path) -> str:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _hashes:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        _hashes[key] = digest.hexdigest()
    return _hashes[key]


def data_identity(task_cfg) -> dict[str, str]:
    """Each data file's content hash (for the Bible, the SWORD module files and the split rule's version)."""
    identity = {name: file_sha256(path) for name, path in data_files(task_cfg).items()}
    if CorpusKind(task_cfg.corpus) == CorpusKind.bible:
        from frozen_sweep.data.bible import SPLIT_VERSION

        identity["bible_split_version"] = str(SPLIT_VERSION)
    return identity
