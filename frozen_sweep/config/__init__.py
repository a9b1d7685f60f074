"""The config's typed schema, one module per group (task, model, freeze, reservoir, relearn, trainer, loggers) and
the root (schema.py), gathered here so that every stage imports its names from `frozen_sweep.config`. The checks
(checks.py), the reservoir layout (stack_layout.py) and --help's group list (help_text.py) are imported by name."""

from frozen_sweep.config.finetune import SCRATCH, FinetuneConfig, FreezeFrom, FrozenMode, ScratchModel
from frozen_sweep.config.freeze import COMPONENTS, ComponentSpec, FreezeConfig, Init
from frozen_sweep.config.loggers import LoggerName, MlflowConfig, WandbConfig
from frozen_sweep.config.model import (
    Activation,
    FfnKind,
    ModelConfig,
    NormPosition,
    Pooling,
    Positions,
    TieEmbeddings,
)
from frozen_sweep.config.relearn import RelearnConfig, ResetParts
from frozen_sweep.config.reservoir import Placement, ReservoirConfig, ReservoirType, StackName
from frozen_sweep.config.schema import (
    BASE_KEYS,
    BASE_PREFIX,
    NEUTRAL_KEYS,
    Config,
    ConfigError,
    StudyName,
    register_configs,
)
from frozen_sweep.config.task import GLUE_DATASET, BibleLabels, CorpusKind, TaskConfig, TaskKind
from frozen_sweep.config.trainer import CompileScope, Device, EvalConfig, StopMetric, TrainerConfig

__all__ = [
    "BASE_KEYS", "BASE_PREFIX", "COMPONENTS", "GLUE_DATASET", "NEUTRAL_KEYS", "SCRATCH", "Activation", "BibleLabels", "ComponentSpec", "Config", "CompileScope", "ConfigError", "CorpusKind", "Device",
    "EvalConfig", "FfnKind", "FinetuneConfig", "FreezeConfig", "FreezeFrom", "FrozenMode", "Init", "LoggerName", "MlflowConfig", "ModelConfig", "NormPosition", "Placement", "Pooling", "Positions",
    "RelearnConfig", "ReservoirConfig", "ReservoirType", "ResetParts", "ScratchModel", "StackName", "StopMetric",
    "StudyName", "TaskConfig", "TaskKind", "TieEmbeddings", "TrainerConfig", "WandbConfig", "register_configs",
]  # fmt: skip
