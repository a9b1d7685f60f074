"""The root of the config (`Config`, one field per group), the keys that do not change a result, and the registration
of every group's schema in Hydra's ConfigStore.

OmegaConf checks types and enum values when the config is composed (so a typo in a key or a value stops the
command before anything runs); frozen_sweep.config.checks adds the range and cross-field checks a type system cannot
express. Only the schema in this package's group modules: no torch, no file access, so that the model, the data and
the launchers can all import it."""

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Dict, List

from omegaconf import MISSING, OmegaConf

from frozen_sweep.config.finetune import FinetuneConfig
from frozen_sweep.config.freeze import FreezeConfig
from frozen_sweep.config.loggers import MlflowConfig, WandbConfig
from frozen_sweep.config.model import ModelConfig
from frozen_sweep.config.relearn import RelearnConfig
from frozen_sweep.config.reservoir import ReservoirConfig
from frozen_sweep.config.task import TaskConfig
from frozen_sweep.config.trainer import EvalConfig, TrainerConfig


class ConfigError(ValueError):
    """A config value that cannot work; the message names the key and what is allowed."""


class StudyName(Enum):
    """Which study a job belongs to: its hooks (frozen_sweep/study/<name>.py) and the collector's table for it."""

    freeze = "freeze"
    reservoir = "reservoir"
    relearn = "relearn"
    finetune = "finetune"


@dataclass
class Config:
    study: StudyName = StudyName.freeze  # the reservoir and relearn groups set their study, experiments too
    task: TaskConfig = MISSING
    model: ModelConfig = MISSING
    freeze: FreezeConfig = MISSING
    trainer: TrainerConfig = MISSING
    reservoir: ReservoirConfig = MISSING
    relearn: RelearnConfig = MISSING
    eval: EvalConfig = field(default_factory=EvalConfig)
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)  # study=finetune
    name: str = "default"  # the sweep's folder under outputs/
    seed: int = 1
    force: bool = False  # rerun a job even if its directory holds a completed result
    dry_run: bool = False  # print what each job of the command would do (run, resume, skip, adopt, refuse); run none
    # a dry run and a launch say what each job to run costs, from a short probe of its step (frozen_sweep.job.probe)
    estimate: bool = True
    # runs a sweep trains before the jobs that start from them: finetune.base_checkpoint=bases.NAME (or
    # relearn.base_checkpoint) names the job that `python -m frozen_sweep -m <bases.NAME>` runs, in its directory
    bases: Dict[str, List[str]] = field(default_factory=dict)


BASE_PREFIX = "bases."  # a base_checkpoint value naming one of the config's bases (bases.NAME), not a directory
BASE_KEYS = ("finetune.base_checkpoint", "relearn.base_checkpoint")


# Keys that change where or how a job runs, not what it computes: job directory names leave them out (conf/config.yaml
# reads them through the `neutral_keys` resolver), fingerprints too (frozen_sweep.job.fingerprint) and so do the
# collector's settings (frozen_sweep.tables.runs). The thread keys change a result's last bits, not what it measures:
# the record says how it ran (`threads`, `follow_free_cores`); task.report, only what its table shows.
NEUTRAL_KEYS = frozenset(
    {"name", "force", "dry_run", "estimate", "task.cache_dir", "task.report", "trainer.progress", "trainer.threads",
     "trainer.follow_free_cores", "trainer.device", "trainer.keep_checkpoints", "trainer.loggers",
     "trainer.log_every_steps", "trainer.dist_timeout_s", "trainer.step_times"}
    | {f"trainer.wandb.{f.name}" for f in fields(WandbConfig)}
    | {f"trainer.mlflow.{f.name}" for f in fields(MlflowConfig)}
)  # fmt: skip


def register_configs() -> None:
    """The schemas live in their own group, so that `freeze=glob(*)` sweeps exactly the YAML options; the
    `neutral_keys` resolver gives conf/config.yaml the NEUTRAL_KEYS (and the extra keys it names); `join` names a
    row of several sweep axes for a key, e.g. `${trainer.step_times.${join:${reservoir.name},${model.encoder_layers}}}`
    picks "ffn_4" (an interpolated key must be a string)."""
    from hydra.core.config_store import ConfigStore  # here: what only reads records (the collector) needs no Hydra

    OmegaConf.register_new_resolver("neutral_keys", lambda *extra: sorted(NEUTRAL_KEYS | set(extra)), replace=True)
    OmegaConf.register_new_resolver("join", lambda *parts: "_".join(map(str, parts)), replace=True)
    cs = ConfigStore.instance()
    cs.store(name="config_schema", node=Config)
    cs.store(group="schema", name="task", node=TaskConfig)
    cs.store(group="schema", name="model", node=ModelConfig)
    cs.store(group="schema", name="freeze", node=FreezeConfig)
    cs.store(group="schema", name="trainer", node=TrainerConfig)
    cs.store(group="schema", name="relearn", node=RelearnConfig)
    cs.store(group="schema", name="reservoir", node=ReservoirConfig)
