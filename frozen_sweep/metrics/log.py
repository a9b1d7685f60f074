"""Metrics as they happen: the records `trainer.loggers` write (metrics.jsonl by default; frozen_sweep.metrics.sinks).

Every `trainer.log_every_steps` steps one `train` record: mean train loss since the last record, learning rate,
target tokens per second (over the steps' own time, as result.json's train_tokens_per_s), gradient norm (of the
last step's gradients, after clipping when clipping is on). At each validation one `valid` record: loss,
perplexity, BLEU. Every record carries `step`, `epoch` and `wall_time_s` (the run's training time, validation
included, as in result.json's history).

Values stay on the device between records: a step only adds its loss to a running sum, and the host reads it (one
sync) at a record. A resumed run appends: its first step k drops every record the file holds at step >= k (what
the interrupted run logged after its checkpoint), and TensorBoard is told to purge them too (`purge_step`).
W&B and MLflow continue the job's earlier run (frozen_sweep.metrics.sinks).
"""

import math
from pathlib import Path

import torch

from frozen_sweep.config.loggers import LoggerName
from frozen_sweep.metrics.sinks import SINKS, check_installed


def _number(value) -> float | None:
    """A plain float for the record, null when not finite (a diverged loss), so every line is strict JSON."""
    if value is None:
        return None
    value = float(value.item() if isinstance(value, torch.Tensor) else value)
    return value if math.isfinite(value) else None


class MetricsLog:
    """The run's metric loggers: `train` at the trainer's loss reads, `validation` after every validation, `close`."""

    def __init__(self, run_dir: Path, trainer_cfg, optimizer: torch.optim.Optimizer, run_config=None):
        """`run_config`, the job's whole config, names the W&B and MLflow runs and is logged with them."""
        self.run_dir, self.optimizer, self.run_config = Path(run_dir), optimizer, run_config
        self.names = [LoggerName(name) for name in trainer_cfg.loggers]
        self.every = trainer_cfg.log_every_steps
        self.sinks: list = []
        self.opened = False  # at the first step or validation: it knows the step a resumed run starts from
        check_installed(self.names)  # fail now, before training, if a logger's package is missing

    def open(self, step: int) -> None:
        """Open the loggers where a run's first new step is `step`: drop what was logged from it on (a resumed run
        logged it before it was killed). Trainer.fit opens them with the step it starts from."""
        if self.opened:
            return
        self.opened = True
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.sinks = [SINKS[name](self.run_dir, step, self.run_config) for name in self.names]

    def _write(self, record: dict) -> None:
        for sink in self.sinks:
            sink.write(record)

    def train(self, state, epoch: float, loss: float, tokens_per_s: float) -> None:
        """A record of the training steps since the last one (the trainer calls it where it reads the loss from the
        device: every trainer.log_every_steps steps and at validations): their mean loss and tokens/s, the current
        learning rate and the gradient norm of the last step."""
        if not self.names:
            return
        self.open(state.step)
        grads = [p.grad for group in self.optimizer.param_groups for p in group["params"] if p.grad is not None]
        self._write(
            {
                "event": "train",
                "step": state.step,
                "epoch": round(epoch, 4),
                "wall_time_s": round(state.train_time_s, 3),
                "loss": _number(loss),
                "lr": self.optimizer.param_groups[0]["lr"],
                "tokens_per_s": round(tokens_per_s, 1),
                "grad_norm": _number(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))) if grads else None,
            }
        )

    def validation(self, entry: dict) -> None:
        """One record of a validation (a history entry of train.py) and a flush, so that readers see it now."""
        if not self.names:
            return
        self.open(entry["step"])
        record = {"event": "valid", "step": entry["step"], "epoch": entry["epoch"], "wall_time_s": entry["wall_time_s"]}
        record.update({key: _number(entry[f"valid_{key}"]) for key in ("loss", "ppl", "bleu")})
        self._write(record)
        for sink in self.sinks:
            sink.flush()

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()
        self.sinks = []
        self.opened = False
