"""The schema of `trainer.loggers` and of the W&B and MLflow loggers' settings (frozen_sweep.metrics.sinks writes
them); part of frozen_sweep.config's TrainerConfig. No torch, no files."""

from dataclasses import dataclass
from enum import Enum
from typing import Optional


class LoggerName(Enum):
    jsonl = "jsonl"  # <run dir>/metrics.jsonl, one JSON record a line
    tensorboard = "tensorboard"  # <run dir>/tensorboard/ event files (tensorboardX)
    wandb = "wandb"  # Weights & Biases (`pip install 'frozen_sweep[wandb]'`): trainer.wandb
    mlflow = "mlflow"  # MLflow (`pip install 'frozen_sweep[mlflow]'`): trainer.mlflow


class WandbMode(Enum):
    online = "online"
    offline = "offline"  # written under <run dir>/wandb/; `wandb sync` uploads it later
    disabled = "disabled"


@dataclass
class WandbConfig:  # one W&B run per job, grouped by the sweep's name (docs/training.md, "Metrics as they happen")
    project: str = "frozen_sweep"
    entity: Optional[str] = None  # null: the logged-in user's default
    mode: Optional[WandbMode] = None  # null: wandb's own choice (WANDB_MODE, else online)


@dataclass
class MlflowConfig:  # one MLflow run per job
    tracking_uri: Optional[str] = None  # null: $MLFLOW_TRACKING_URI, else a file store outputs/<name>/mlruns
    experiment: Optional[str] = None  # null: the sweep's name
