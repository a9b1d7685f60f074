"""Metrics as they happen: `metrics.jsonl` (on by default) and TensorBoard event files in the run's directory.

Every `trainer.log_every_steps` steps one `train` record: mean train loss since the last record, learning rate,
target tokens per second (over the steps' own time, as result.json's train_tokens_per_s), gradient norm (of the
last step's gradients, after clipping when clipping is on). At each validation one `valid` record: loss,
perplexity, BLEU. Every record carries `step`, `epoch` and `wall_time_s` (the run's training time, validation
included, as in result.json's history).

Values stay on the device between records: a step only adds its loss to a running sum, and the host reads it (one
sync) at a record. A resumed run appends: its first step k drops every record the file holds at step >= k (what
the interrupted run logged after its checkpoint), and TensorBoard is told to purge them too (`purge_step`).
"""

import json
import math
from pathlib import Path

import torch

from frozen_sweep.config import LoggerName
from frozen_sweep.run_dir import METRICS_FILE, TENSORBOARD_DIR, write_text_atomic


def _number(value) -> float | None:
    """A plain float for the record, null when not finite (a diverged loss), so every line is strict JSON."""
    if value is None:
        return None
    value = float(value.item() if isinstance(value, torch.Tensor) else value)
    return value if math.isfinite(value) else None


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


class MetricsLog:
    """The run's metric loggers: `train` at the trainer's loss reads, `validation` after every validation, `close`."""

    def __init__(self, run_dir: Path, trainer_cfg, optimizer: torch.optim.Optimizer):
        self.run_dir, self.optimizer = Path(run_dir), optimizer
        self.names = {LoggerName(name) for name in trainer_cfg.loggers}
        self.every = trainer_cfg.log_every_steps
        self.jsonl = self.tensorboard = None
        self.opened = False  # at the first step or validation: it knows the step a resumed run starts from
        if LoggerName.tensorboard in self.names:
            import tensorboardX  # noqa: F401 — fail now, before training, if the package is missing

    def open(self, step: int) -> None:
        """Open the loggers where a run's first new step is `step`: drop what was logged from it on (a resumed run
        logged it before it was killed). Trainer.fit opens them with the step it starts from."""
        if self.opened:
            return
        self.opened = True
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if LoggerName.jsonl in self.names:
            path = self.run_dir / METRICS_FILE
            if path.exists():
                truncate_jsonl(path, step)
            self.jsonl = path.open("a", encoding="utf-8", buffering=1)  # line-buffered: readable while training
        if LoggerName.tensorboard in self.names:
            from tensorboardX import SummaryWriter

            # one event file per start; the suffix keeps a restart within the same second from overwriting one
            self.tensorboard = SummaryWriter(
                str(self.run_dir / TENSORBOARD_DIR), purge_step=step, filename_suffix=f".from_step{step}"
            )

    def _write(self, record: dict) -> None:
        if self.jsonl is not None:
            self.jsonl.write(json.dumps(record) + "\n")
        if self.tensorboard is not None:
            event = record["event"]
            for key, value in record.items():
                if key not in ("event", "step", "epoch") and value is not None:
                    self.tensorboard.add_scalar(f"{event}/{key}", value, record["step"])

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
        if self.tensorboard is not None:
            self.tensorboard.flush()

    def close(self) -> None:
        for logger in (self.jsonl, self.tensorboard):
            if logger is not None:
                logger.close()
        self.jsonl = self.tensorboard = None
        self.opened = False
