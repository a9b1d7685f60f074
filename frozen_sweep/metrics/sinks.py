"""Where metric records go: metrics.jsonl, TensorBoard, Weights & Biases, MLflow (`trainer.loggers`).

Each sink takes the records frozen_sweep.metrics.log builds ({"event": "train" | "valid", "step", "epoch", ...}) and
writes them in its own format. No torch here: the launchers check before any job starts that the packages of the
chosen sinks are installed (`check_installed`), and the collector reads metrics.jsonl without torch.

W&B and MLflow runs are named after the job's directory and grouped by the sweep's `name`; their ids are kept in the
job's directory (run_dir.TRACKING_RUNS_FILE), so a job resumed from its checkpoint continues the same run, while a job
started afresh (or with force=true) starts a new one. A resumed job logs again the steps after its checkpoint: W&B
drops the ones it already holds, MLflow keeps both values of those steps.
"""

import importlib.util
import json
import os
import sys
import time
import uuid
from pathlib import Path

from omegaconf import OmegaConf

from frozen_sweep.config import ConfigError
from frozen_sweep.config.loggers import LoggerName
from frozen_sweep.run.directory import METRICS_FILE, TENSORBOARD_DIR, TRACKING_RUNS_FILE, WANDB_DIR, flatten
from frozen_sweep.system.files import write_json_atomic, write_text_atomic  # fmt: skip

# logger → (the module it imports, the extra that installs it)
OPTIONAL_PACKAGES = {LoggerName.wandb: ("wandb", "wandb"), LoggerName.mlflow: ("mlflow", "mlflow")}


def check_installed(loggers) -> None:
    """ConfigError naming the extra to install for a chosen logger whose package this Python lacks."""
    for name in map(LoggerName, loggers):
        module, extra = OPTIONAL_PACKAGES.get(name, (None, None))
        if module and importlib.util.find_spec(module) is None:
            raise ConfigError(
                f"trainer.loggers: {name.value} needs the {module} package, which this Python ({sys.executable}) "
                f"lacks: pip install 'frozen_sweep[{extra}]' (or drop {name.value} from trainer.loggers)"
            )


def read_metrics(path: Path) -> list[dict]:
    """The records of a metrics.jsonl; a torn last line (a run killed mid-write) is skipped."""
    records = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def truncate_jsonl(path: Path, step: int) -> None:
    """Keep only the records before `step`, rewriting the file atomically."""
    kept = [r for r in read_metrics(path) if r.get("step", 0) < step]
    write_text_atomic(path, "".join(json.dumps(r) + "\n" for r in kept))


def scalars(record: dict) -> dict[str, float]:
    """{"train/loss": ..., "valid/bleu": ...}: the record's values under its event's name, nulls left out."""
    return {f"{record['event']}/{k}": v for k, v in record.items() if k not in ("event", "step", "epoch") and v is not None}


class JsonlSink:
    def __init__(self, run_dir: Path, step: int, run_config):
        path = run_dir / METRICS_FILE
        if path.exists():
            truncate_jsonl(path, step)
        self.file = path.open("a", encoding="utf-8", buffering=1)  # line-buffered: readable while training

    def write(self, record: dict) -> None:
        self.file.write(json.dumps(record) + "\n")

    def flush(self) -> None:
        pass  # line-buffered

    def close(self) -> None:
        self.file.close()


class TensorboardSink:
    def __init__(self, run_dir: Path, step: int, run_config):
        from tensorboardX import SummaryWriter

        # one event file per start; the suffix keeps a restart within the same second from overwriting one
        self.writer = SummaryWriter(str(run_dir / TENSORBOARD_DIR), purge_step=step, filename_suffix=f".from_step{step}")

    def write(self, record: dict) -> None:
        for key, value in scalars(record).items():
            self.writer.add_scalar(key, value, record["step"])

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def _tracking_run_id(run_dir: Path, step: int, logger: str) -> str | None:
    """The id this job's earlier start gave its `logger` run, when the job resumes (a fresh start gets a new run)."""
    try:
        return json.loads((run_dir / TRACKING_RUNS_FILE).read_text())[logger] if step > 1 else None
    except (OSError, ValueError, KeyError):
        return None


def _keep_tracking_run_id(run_dir: Path, logger: str, run_id: str) -> None:
    try:
        ids = json.loads((run_dir / TRACKING_RUNS_FILE).read_text())
    except (OSError, ValueError):
        ids = {}
    write_json_atomic(run_dir / TRACKING_RUNS_FILE, {**ids, logger: run_id})


def _flat_config(run_config) -> dict:
    return flatten(OmegaConf.to_container(run_config, resolve=True, enum_to_str=True))


class WandbSink:
    def __init__(self, run_dir: Path, step: int, run_config):
        import wandb

        settings = run_config.trainer.wandb
        run_id = _tracking_run_id(run_dir, step, "wandb") or uuid.uuid4().hex[:12]
        _keep_tracking_run_id(run_dir, "wandb", run_id)
        (run_dir / WANDB_DIR).mkdir(exist_ok=True)
        self.run = wandb.init(
            project=settings.project, entity=settings.entity, mode=settings.mode and settings.mode.value,
            dir=str(run_dir), id=run_id, resume="allow", name=run_dir.name, group=run_config.name,
            config=_flat_config(run_config), settings=wandb.Settings(console="off", silent=True),
        )  # fmt: skip

    def write(self, record: dict) -> None:
        self.run.log({**scalars(record), "epoch": record["epoch"]}, step=record["step"])

    def flush(self) -> None:
        pass  # wandb's own process writes as records come

    def close(self) -> None:
        self.run.finish()


class MlflowSink:
    BATCH = 100  # MLflow takes at most 100 params per log_batch

    def __init__(self, run_dir: Path, step: int, run_config):
        settings = run_config.trainer.mlflow
        uri = settings.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or (run_dir.parent / "mlruns").as_uri()
        if uri.startswith("file:"):  # MLflow 3 keeps its file store but asks to be told that it is wanted
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        from mlflow.entities import Metric, Param
        from mlflow.tracking import MlflowClient

        self.client, self.metric = MlflowClient(tracking_uri=uri), Metric
        self.run_id = _tracking_run_id(run_dir, step, "mlflow")
        if self.run_id is None:
            name = settings.experiment or run_config.name
            experiment = self.client.get_experiment_by_name(name)
            experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(name)
            self.run_id = self.client.create_run(experiment_id, run_name=run_dir.name).info.run_id
            params = [Param(k, str(v)[:6000]) for k, v in _flat_config(run_config).items()]
            for start in range(0, len(params), self.BATCH):
                self.client.log_batch(self.run_id, params=params[start : start + self.BATCH])
            _keep_tracking_run_id(run_dir, "mlflow", self.run_id)

    def write(self, record: dict) -> None:
        now = int(time.time() * 1000)
        metrics = [self.metric(k, float(v), now, record["step"]) for k, v in scalars(record).items()]
        self.client.log_batch(self.run_id, metrics=metrics)

    def flush(self) -> None:
        pass  # every record is logged as it comes

    def close(self) -> None:
        self.client.set_terminated(self.run_id)


SINKS = {LoggerName.jsonl: JsonlSink, LoggerName.tensorboard: TensorboardSink, LoggerName.wandb: WandbSink,
         LoggerName.mlflow: MlflowSink}  # fmt: skip
